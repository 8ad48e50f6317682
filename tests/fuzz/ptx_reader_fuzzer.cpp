// Fuzzes read_ptx: the Launch RPC reads PTX from cache entries a shared Redis
// holds, the client from the daemon's answers; any text must parse or fail cleanly.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "metadata/ptx_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kjit::Result<kjit::PtxModule> module = kjit::read_ptx(text);
  if (!module) {
    FUZZ_CHECK_REFUSED(module.error());
    return 0;
  }
  FUZZ_CHECK(!module->version.empty() && !module->target.empty());
  for (const kjit::PtxKernel& kernel : module->kernels) {
    const kjit::KernelInfo& info = kernel.info;
    FUZZ_CHECK(!info.lowered_name.empty());
    FUZZ_CHECK(info.static_shared_bytes <= info.shared_section_bytes);
    // find() must locate every kernel it returned by its own name.
    FUZZ_CHECK(module->find(info.lowered_name) != nullptr);
  }
  return 0;
}
