// Reads an AMD GPU code object (hsaco: the ELF that LLVM's AMDGPU backend and
// ld.lld produce for one gfx processor) into per-kernel launch metadata, from
// its NT_AMDGPU_METADATA note. No ROCm tool or library is needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

struct HsacoInfo {
  // amdhsa.target as written: "amdgcn-amd-amdhsa--gfx90a:xnack-".
  std::string target_id;
  // The processor of target_id without its features: "gfx90a".
  std::string processor;
  // 3, 4, 5, 6: from the ELF header's ABI version (HSA v3 is 1, v4 2, ...).
  uint32_t code_object_version = 0;
  // One per entry of amdhsa.kernels, sorted by lowered_name. `registers` is
  // the VGPR count, `scalar_registers` the SGPR count.
  std::vector<KernelInfo> kernels;
};

// Parses `bytes`: a 64-bit AMDGPU ELF (e_machine 224, OS ABI AMDGPU HSA,
// code object v3 or newer) and its metadata note (type 32, owner "AMDGPU",
// msgpack). Anything else, or metadata without the expected keys and types,
// is ErrorCode::invalid_argument with a message that says what. No input is
// read out of bounds, nothing throws, and the msgpack decoder's allocations
// are bounded by the note's size.
Result<HsacoInfo> read_hsaco(std::string_view bytes);

}  // namespace kjit
