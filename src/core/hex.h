// Bytes as lowercase hexadecimal, two digits a byte, in order: digests,
// random ids, bytes quoted in messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kjit {

std::string hex_lower(const void* bytes, size_t count);
inline std::string hex_lower(std::string_view bytes) { return hex_lower(bytes.data(), bytes.size()); }

}  // namespace kjit
