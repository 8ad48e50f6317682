// Pass "nvvm-reflect": resolves __nvvm_reflect("__CUDA_ARCH") and
// __nvvm_reflect("__CUDA_FTZ") (libdevice branches on both) with LLVM's
// NVVMReflect pass, from the target and the request's -ftz option.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "backends/llvm/llvm_module.h"

namespace kjit {

struct NvvmReflectRequest {
  std::string_view ir;  // text or bitcode
  std::string_view name;
  LlvmTarget target;
  // -ftz=true|false. Given, it sets the module's "nvvm-reflect-ftz" flag and
  // every function's f32 denormal mode (flush, as NVRTC's -ftz=true does);
  // absent, the module's own flag stands (none: no flush).
  std::optional<bool> ftz;
};

// Bitcode with every __nvvm_reflect call folded to a constant; the input
// itself when it calls none and no -ftz is given.
Result<std::string> run_nvvm_reflect(const NvvmReflectRequest& request);

}  // namespace kjit
