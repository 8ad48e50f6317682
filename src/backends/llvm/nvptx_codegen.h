// Pass "nvptx-codegen": LLVM IR (text or bitcode) -> PTX through LLVM's NVPTX
// back end, with the CPU and PTX features the target table gives.
#pragma once

#include <string>
#include <string_view>

#include "backends/llvm/llvm_module.h"

namespace kjit {

Result<std::string> nvptx_codegen(std::string_view ir, std::string_view name, const LlvmTarget& target);

}  // namespace kjit
