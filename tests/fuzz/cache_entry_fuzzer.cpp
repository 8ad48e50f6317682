// Fuzzes decode_entry: cache entries come back from disk and from a shared
// Redis that other hosts write, so any bytes must decode or fail as corrupt.
#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/cache_entry.h"
#include "fuzz_check.h"

namespace {

// Offsets of the header fields, as cache_entry.h lays them out.
constexpr size_t k_offset_checksum = 32;
constexpr size_t k_checksum_field_bytes = 32;

// Both overloads must agree on every input; the rvalue one reuses the buffer.
kjit::Result<kjit::CacheEntry> decode_both(std::string_view bytes, std::string_view expected_key) {
  kjit::Result<kjit::CacheEntry> by_view = kjit::decode_entry(bytes, expected_key);
  kjit::Result<kjit::CacheEntry> by_value = kjit::decode_entry(std::string(bytes), expected_key);
  FUZZ_CHECK(by_view.ok() == by_value.ok());
  if (!by_view) {
    FUZZ_CHECK(kjit::is_corrupt_entry_error(by_view.error()));
    FUZZ_CHECK(by_view.error().message == by_value.error().message);
    return by_view;
  }
  FUZZ_CHECK(kjit::encode_entry(*by_view) == kjit::encode_entry(*by_value));
  return by_view;
}

void check_decoded(const kjit::CacheEntry& entry) {
  FUZZ_CHECK(entry.key.size() <= kjit::k_max_entry_key_bytes);
  // One round trip normalizes the metadata (field order, duplicates); from
  // then on encode and decode must be exact inverses.
  const std::string encoded = kjit::encode_entry(entry);
  kjit::Result<kjit::CacheEntry> again = kjit::decode_entry(encoded, entry.key);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(kjit::encode_entry(*again) == encoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto entry = decode_both(bytes, "")) {
    check_decoded(*entry);
    // The key the entry names is the one key it must also decode under.
    FUZZ_CHECK(decode_both(bytes, entry->key).ok() || entry->key.empty());
  }
  decode_both(bytes, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");

  // A mutated entry almost never carries a matching checksum, so the
  // metadata parser would only see inputs libFuzzer cannot make. Fix the
  // checksum up and decode again to reach it.
  if (size < kjit::k_entry_header_bytes) return 0;
  std::string fixed(bytes);
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(
      &canonical, XXH3_128bits(fixed.data() + kjit::k_entry_header_bytes, fixed.size() - kjit::k_entry_header_bytes));
  std::fill_n(fixed.begin() + k_offset_checksum, k_checksum_field_bytes, '\0');
  std::copy_n(reinterpret_cast<const char*>(canonical.digest), sizeof(canonical.digest),
              fixed.begin() + k_offset_checksum);
  if (auto entry = decode_both(fixed, "")) check_decoded(*entry);
  return 0;
}
