// The passes kjit ships: nvrtc-compile, nvjitlink-link, libdevice-link,
// nvvm-reflect, llvm-passes, nvptx-codegen, ptx-retarget.
#pragma once

#include "pipeline/pass.h"

namespace kjit {

void register_builtin_passes(PassRegistry& registry);

// What a pass running LLVM adds to the key: LLVM's version and the triple
// every module is compiled for (NVPTX or AMDGPU, by the target).
std::vector<KeyComponent> llvm_toolchain_key(const CompileJob& job, const CudaToolkit& toolkit);

// invalid_argument when the toolkit's NVRTC cannot compile for the target,
// naming the toolkit, the version that first has the target, and what it has.
Status check_toolkit_supports(const CudaToolkit& toolkit, const Target& target);

}  // namespace kjit
