// Integers as little-endian bytes, the order of every integer in the cache's
// byte formats (entries, bundles), whatever the host's own order.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kjit {

// Appends `value`'s sizeof(T) bytes to `out`.
template <typename T>
void append_le(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

// Overwrites `out`'s sizeof(T) bytes at `offset`, which must be there.
template <typename T>
void store_le(std::string& out, size_t offset, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// Reads sizeof(T) bytes at `offset`; the caller has checked they are there.
template <typename T>
T load_le(std::string_view bytes, size_t offset) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

}  // namespace kjit
