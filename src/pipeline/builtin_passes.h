// The passes kjit ships: nvrtc-compile, nvjitlink-link, libdevice-link,
// nvvm-reflect, llvm-passes, nvptx-codegen, ptx-retarget.
#pragma once

#include "pipeline/pass.h"

namespace kjit {

void register_builtin_passes(PassRegistry& registry);

// invalid_argument when the toolkit's NVRTC cannot compile for the target,
// naming the toolkit, the version that first has the target, and what it has.
Status check_toolkit_supports(const CudaToolkit& toolkit, const Target& target);

}  // namespace kjit
