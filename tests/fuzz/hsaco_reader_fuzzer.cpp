// Fuzzes read_hsaco: it reads whatever a HIP pipeline's last stage produced
// (hipRTC, comgr, llc + lld, a plugin pass), and the metadata note is decoded
// by a library that throws, so any bytes must fail cleanly and boundedly.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "metadata/hsaco_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kjit::Result<kjit::HsacoInfo> info = kjit::read_hsaco(bytes);
  if (!info) {
    // The header promises this for every bad input.
    FUZZ_CHECK_REFUSED(info.error());
    return 0;
  }
  FUZZ_CHECK(info->code_object_version >= 3);
  FUZZ_CHECK(info->processor.starts_with("gfx") && info->processor.size() > 3);
  FUZZ_CHECK(info->target_id.find(info->processor) != std::string::npos);
  for (size_t i = 0; i < info->kernels.size(); ++i) {
    const kjit::KernelInfo& kernel = info->kernels[i];
    FUZZ_CHECK(!kernel.lowered_name.empty());
    FUZZ_CHECK(!kernel.name.empty());
    if (i > 0) FUZZ_CHECK(info->kernels[i - 1].lowered_name < kernel.lowered_name);
  }
  return 0;
}
