// The pass that builds cubins from Tile IR bytecode: tileiras-assemble,
// running NVIDIA's tileiras (backends/tileiras) as a child process, and
// what of it enters the cache key.
#pragma once

#include "pipeline/pass.h"

namespace kjit {

void register_tileir_passes(PassRegistry& registry);

// What tileiras-assemble adds to the key: tileiras' release and build
// ("toolchain.tileiras"), and the GPU name it is given.
std::vector<KeyComponent> tileiras_key(const CompileJob& job, const CudaToolkit& toolkit);

}  // namespace kjit
