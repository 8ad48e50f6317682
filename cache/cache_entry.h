// One cache entry and its byte format, shared by the disk file and the Redis
// value: a fixed header (magic, format version, key, sizes, checksum), JSON
// metadata and the artifact bytes as payload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/artifact.h"
#include "kjit/status.h"

namespace kjit {

struct CacheEntry {
  std::string key;  // CacheKey::hex
  Artifact artifact;
  double compile_ms = 0;     // what a hit saves; summed into "compile time saved"
  int64_t created_unix = 0;  // seconds since the epoch, when it was compiled
};

// The first bytes of every entry; a file that starts otherwise is not ours.
inline constexpr std::string_view k_entry_magic = "KJITCACH";
// Bumped whenever the header or the metadata changes meaning; an entry of
// another version is treated as corrupt (removed and compiled again).
inline constexpr uint32_t k_entry_format_version = 1;
// Size of the fixed part of the header, before the key bytes.
inline constexpr size_t k_entry_header_bytes = 64;
// Bounds checked before anything is allocated, so a damaged size field can
// never make a reader allocate gigabytes.
inline constexpr size_t k_max_entry_key_bytes = 256;
inline constexpr uint64_t k_max_entry_metadata_bytes = 64ull << 20;

// Layout, all integers little-endian:
//   magic[8] version:u32 key_size:u32 metadata_size:u64 payload_size:u64
//   sha256(metadata || payload)[32] key[key_size] metadata[] payload[]
// The metadata is a JSON object with every Artifact field but bytes (the
// payload), plus compile_ms and created_unix. A field added to Artifact must
// be added there too, with k_entry_format_version bumped.
std::string encode_entry(const CacheEntry& entry);

// Parses and verifies an encoded entry. Every mismatch (magic, version, key,
// sizes, checksum, metadata) is an ErrorCode::internal error whose message
// starts with "corrupt entry: "; nothing in `bytes` can make it crash.
// An empty `expected_key` accepts whatever key the entry names.
Result<CacheEntry> decode_entry(std::string_view bytes, std::string_view expected_key);

// True for errors produced by decode_entry, which callers count as
// corruptions rather than tier failures.
bool is_corrupt_entry_error(const Error& error);

}  // namespace kjit
