// The cache key: SHA-256 over a canonical, versioned list of named
// components. The components are kept so a client can ask why two requests
// got different keys.
#pragma once

#include <string>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"  // KeyComponent

namespace kjit {

// Bumped whenever the meaning or encoding of any component changes, so old
// entries can never be mistaken for new ones.
inline constexpr int k_key_schema_version = 1;

struct CacheKey {
  std::vector<KeyComponent> components;  // in derivation order
  std::string hex;                       // 64 lowercase hex digits
  bool operator==(const CacheKey&) const = default;
};

// Hashes the components in order, each encoded as length-prefixed name and
// value, after a "kjit-key" schema header.
CacheKey derive_key(std::vector<KeyComponent> components);

// Whether text is spelled as CacheKey::hex is: what a user may pass where a
// key is asked for (kjit cache rm KEY, Explain by key).
bool is_key_hex(std::string_view text);
// The same as a request's answer: INVALID_ARGUMENT quoting (the start of)
// what was given, for every RPC that takes a key.
Status check_key_spelling(std::string_view text);

// Lowercase hex SHA-256 of arbitrary bytes (input and header digests).
std::string sha256_hex(std::string_view bytes);

struct KeyDifference {
  std::string name;
  std::string left, right;  // empty with present_* false when absent on a side
  bool present_left = true, present_right = true;
};

// Components that differ by name or value, in the order they appear.
std::vector<KeyDifference> diff_keys(const CacheKey& left, const CacheKey& right);

}  // namespace kjit
