// Kernel argument packing and the --arg parser.
#include "kjit/kernel_args.h"

#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace kjit {

std::string_view to_string(ArgKind kind) {
  switch (kind) {
    case ArgKind::i32:
      return "i32";
    case ArgKind::u32:
      return "u32";
    case ArgKind::i64:
      return "i64";
    case ArgKind::u64:
      return "u64";
    case ArgKind::f32:
      return "f32";
    case ArgKind::f64:
      return "f64";
    case ArgKind::pointer:
      return "ptr";
  }
  return "?";
}

size_t size_of(ArgKind kind) {
  switch (kind) {
    case ArgKind::i32:
    case ArgKind::u32:
    case ArgKind::f32:
      return 4;
    default:
      return 8;
  }
}

KernelArg KernelArg::i32(int32_t value) {
  return {ArgKind::i32, std::bit_cast<uint32_t>(value)};
}
KernelArg KernelArg::u32(uint32_t value) {
  return {ArgKind::u32, value};
}
KernelArg KernelArg::i64(int64_t value) {
  return {ArgKind::i64, std::bit_cast<uint64_t>(value)};
}
KernelArg KernelArg::u64(uint64_t value) {
  return {ArgKind::u64, value};
}
KernelArg KernelArg::f32(float value) {
  return {ArgKind::f32, std::bit_cast<uint32_t>(value)};
}
KernelArg KernelArg::f64(double value) {
  return {ArgKind::f64, std::bit_cast<uint64_t>(value)};
}
KernelArg KernelArg::pointer(uint64_t device_address) {
  return {ArgKind::pointer, device_address};
}

namespace {

Error bad_arg(std::string_view text, std::string why) {
  return make_error(ErrorCode::invalid_argument, "kernel argument '" + std::string(text) + "': " + std::move(why) +
                                                     " (expected i32|u32|i64|u64|f32|f64|ptr:VALUE, e.g. f32:1.5)");
}

// Decimal, or hexadecimal after 0x; the whole text must be the number.
template <typename Int>
bool parse_integer(std::string_view text, Int& value) {
  int base = 10;
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && digits[0] == '-') {
    negative = true;
    digits.remove_prefix(1);
  }
  if (digits.starts_with("0x") || digits.starts_with("0X")) {
    base = 16;
    digits.remove_prefix(2);
  }
  if (digits.empty()) return false;
  if (negative) {
    if constexpr (std::numeric_limits<Int>::is_signed) {
      // Parse with the sign so that the minimum value fits.
      std::string signed_text = "-" + std::string(digits);
      auto [end, ec] = std::from_chars(signed_text.data(), signed_text.data() + signed_text.size(), value, base);
      return ec == std::errc{} && end == signed_text.data() + signed_text.size();
    } else {
      return false;
    }
  }
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  return ec == std::errc{} && end == digits.data() + digits.size();
}

// strtod/strtof: libstdc++ 12 has from_chars for floating point, but these
// also take "inf", "nan" and hex floats the same way C does.
template <typename Float>
bool parse_float(std::string_view text, Float& value) {
  if (text.empty()) return false;
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  if constexpr (sizeof(Float) == 4) {
    value = std::strtof(copy.c_str(), &end);
  } else {
    value = std::strtod(copy.c_str(), &end);
  }
  return end == copy.c_str() + copy.size() && errno != ERANGE;
}

}  // namespace

Result<KernelArg> parse_kernel_arg(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return bad_arg(text, "no type");
  const std::string_view kind = text.substr(0, colon);
  const std::string_view value = text.substr(colon + 1);
  if (kind == "i32") {
    int32_t v;
    if (parse_integer(value, v)) return KernelArg::i32(v);
  } else if (kind == "u32") {
    uint32_t v;
    if (parse_integer(value, v)) return KernelArg::u32(v);
  } else if (kind == "i64") {
    int64_t v;
    if (parse_integer(value, v)) return KernelArg::i64(v);
  } else if (kind == "u64") {
    uint64_t v;
    if (parse_integer(value, v)) return KernelArg::u64(v);
  } else if (kind == "ptr") {
    uint64_t v;
    if (parse_integer(value, v)) return KernelArg::pointer(v);
  } else if (kind == "f32") {
    float v;
    if (parse_float(value, v)) return KernelArg::f32(v);
  } else if (kind == "f64") {
    double v;
    if (parse_float(value, v)) return KernelArg::f64(v);
  } else {
    return bad_arg(text, "unknown type '" + std::string(kind) + "'");
  }
  return bad_arg(text, "'" + std::string(value) + "' is not a " + std::string(kind) + " value");
}

KernelArgs::KernelArgs(std::initializer_list<KernelArg> args) {
  for (const KernelArg& arg : args) add(arg);
}

KernelArgs& KernelArgs::add(const KernelArg& arg) {
  const size_t size = size_of(arg.kind);
  const size_t offset = (size_ + size - 1) / size * size;
  size_ = offset + size;
  words_.resize((size_ + 7) / 8, 0);
  // Little-endian host and device: the value's low bytes are its bytes.
  std::memcpy(reinterpret_cast<std::byte*>(words_.data()) + offset, &arg.bits, size);
  offsets_.push_back(offset);
  return *this;
}

std::span<const std::byte> KernelArgs::bytes() const {
  return {reinterpret_cast<const std::byte*>(words_.data()), size_};
}

void** KernelArgs::params() {
  pointers_.clear();
  for (size_t offset : offsets_) pointers_.push_back(reinterpret_cast<std::byte*>(words_.data()) + offset);
  return pointers_.empty() ? nullptr : pointers_.data();
}

Status KernelArgs::check_fits(const KernelInfo& kernel) const {
  if (kernel.param_bytes == 0 || kernel.param_bytes == size_) return Ok{};
  const std::string name = kernel.name.empty() ? kernel.lowered_name : kernel.name;
  return make_error(ErrorCode::invalid_argument, "kernel " + name + " takes " + std::to_string(kernel.param_bytes) +
                                                     " bytes of parameters; " + std::to_string(count()) +
                                                     " arguments give " + std::to_string(size_) + " bytes");
}

}  // namespace kjit
