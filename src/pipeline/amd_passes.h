// The passes that build AMD code objects: hiprtc-compile (HIP source, with
// HIPRTC loaded at run time), amdgpu-codegen (LLVM IR to an AMDGPU object)
// and lld-link (that object to a code object), and what of their toolchains
// enters the cache key.
#pragma once

#include <string>
#include <vector>

#include "kjit/types.h"
#include "pipeline/pass.h"

namespace kjit {

void register_amd_passes(PassRegistry& registry);

// HIPRTC aborts the process on some inputs, so hiprtc-compile runs only in a
// process that says it may: a compile worker, which the daemon restarts.
// Elsewhere (a daemon with compile_workers = 0) HIP source is refused.
void allow_hiprtc_in_this_process();

}  // namespace kjit
