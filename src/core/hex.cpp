#include "core/hex.h"

namespace kjit {

std::string hex_lower(const void* bytes, size_t count) {
  static constexpr char k_digits[] = "0123456789abcdef";
  const auto* in = static_cast<const unsigned char*>(bytes);
  std::string out;
  out.reserve(count * 2);
  for (size_t i = 0; i < count; ++i) {
    out += k_digits[in[i] >> 4];
    out += k_digits[in[i] & 0xf];
  }
  return out;
}

}  // namespace kjit
