// The passes that hand Triton IR to a Triton build's own pipeline: one for
// NVIDIA targets (a cubin), one for AMD's (a code object).
#pragma once

#include "pipeline/pass.h"

namespace kjit {

void register_triton_passes(PassRegistry& registry);

}  // namespace kjit
