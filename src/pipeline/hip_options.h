// The allowlist of compile options for hip: targets, and where each goes:
// HIPRTC (HIP source) or kjit's AMDGPU code generation (LLVM IR). As for
// CUDA, options that would make the daemon read or write its own files are
// not accepted, and the target comes from the request's target field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"
#include "target/amd_archs.h"

namespace kjit {

struct HipOptions {
  std::vector<std::string> normalized;         // canonical spellings, request order
  std::vector<std::string> hiprtc;             // for HIP source
  // -mcode-object-version=N. Without it, LLVM IR gets LLVM 19's default (5)
  // and HIP source HIPRTC's own (4 for ROCm 5.2).
  std::optional<uint32_t> code_object_version;
  std::optional<bool> wavefront64;             // -m[no-]wavefrontsize64
  // The AMDGPU back end's feature string for LLVM IR: "+wavefrontsize64".
  std::string llvm_features() const;
};

// invalid_argument naming the first option refused, and why. `arch` decides
// whether wave64 can be chosen (RDNA) or is the only size (GCN, CDNA).
Result<HipOptions> check_hip_options(InputKind input, const std::vector<std::string>& options,
                                     const AmdArchInfo& arch);

}  // namespace kjit
