// Fuzzes read_cubin: it reads whatever a pipeline's last stage produced (a
// toolkit, another toolkit's nvJitLink, a plugin pass), so any bytes must fail cleanly.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "metadata/cubin_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kjit::Result<kjit::CubinInfo> info = kjit::read_cubin(bytes);
  if (!info) {
    // The header promises this for every bad input.
    FUZZ_CHECK_REFUSED(info.error());
    return 0;
  }
  FUZZ_CHECK(info->sm != 0);
  for (size_t i = 0; i < info->kernels.size(); ++i) {
    const kjit::KernelInfo& kernel = info->kernels[i];
    FUZZ_CHECK(!kernel.lowered_name.empty());
    FUZZ_CHECK(!kernel.name.empty());
    FUZZ_CHECK(kernel.static_shared_bytes <= kernel.shared_section_bytes);
    if (i > 0) FUZZ_CHECK(info->kernels[i - 1].lowered_name <= kernel.lowered_name);
  }
  return 0;
}
