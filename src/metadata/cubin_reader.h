// Reads a cubin (NVIDIA's ELF for one SM) into per-kernel launch metadata:
// registers, shared and local memory, launch bounds, cluster shape. Parses the
// ELF and its .nv.info records itself; no CUDA tool or library is needed.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

struct CubinInfo {
  uint32_t sm = 0;  // 90 for sm_90 and for sm_90a
  // Built for sm_XXa: the code may use instructions of that one SM and loads
  // on no other.
  bool arch_specific = false;
  // Built for sm_XXXf. The code is the same as for sm_XXX; only ptxas's
  // command line, kept in the cubin's tool note, says so. Informational.
  bool family_specific = false;
  // Shared memory the driver reserves per block that this cubin's
  // .nv.shared.<kernel> sections include (1024 on sm_90 and newer, else 0).
  // KernelInfo::shared_section_bytes - this = KernelInfo::static_shared_bytes.
  uint32_t reserved_shared_bytes = 0;
  std::vector<KernelInfo> kernels;  // one per entry function, by lowered_name
};

// Parses `elf_bytes`. Anything that is not a well-formed 64-bit CUDA ELF, or
// whose records do not have the expected shape, is ErrorCode::invalid_argument
// with a message that says what and where; no input is read out of bounds.
Result<CubinInfo> read_cubin(std::string_view elf_bytes);

}  // namespace kjit
