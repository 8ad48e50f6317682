// LLVM IR (text or bitcode) -> an AMDGPU ELF relocatable object through
// LLVM's AMDGPU back end; hsaco_link.h turns the object into a code object.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

// What the ROCm runtime loads: HSA code objects.
inline constexpr std::string_view k_amdgpu_triple = "amdgcn-amd-amdhsa";
inline constexpr uint32_t k_default_code_object_version = 5;  // LLVM 19's default

struct AmdgpuCodegenRequest {
  std::string_view ir;    // text or bitcode
  std::string_view name;  // for messages
  std::string processor;  // "gfx90a"
  std::string features;   // "" or e.g. "+wavefrontsize64,-xnack"
  // 4, 5 or 6 (what LLVM 19 writes). Set as the module flag
  // "amdhsa_code_object_version" (value * 100), replacing one the module has.
  uint32_t code_object_version = k_default_code_object_version;
};

// A module that does not parse or verify, one for another architecture
// (nvptx, x86), an unknown processor or feature, or an unsupported code
// object version is invalid_argument with LLVM's message; so is what the
// back end reports while compiling (LDS over the processor's limit). A
// module without a triple is compiled for k_amdgpu_triple. Safe to call from
// any thread; each call has its own LLVM context.
Result<std::string> amdgpu_codegen(const AmdgpuCodegenRequest& request);

}  // namespace kjit
