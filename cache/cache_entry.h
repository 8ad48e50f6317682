// One cache entry and its byte format, shared by the disk file and the Redis
// value: a fixed header (magic, format version, key, sizes, checksum), the
// metadata (protobuf, kjit.internal.ArtifactRecord) and the artifact bytes as
// payload.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/artifact.h"
#include "kjit/status.h"

namespace kjit {

// What a client stored under (namespace, key, name), rather than what kjit
// compiled. The cache keeps keys opaque; whoever derives a blob's key keeps
// blob keys and compile keys apart, and checks the identity on every read.
struct BlobIdentity {
  std::string kind;  // "client-blob" or "client-blob-group"; never empty
  std::string ns;
  std::string key;
  std::string name;
  bool operator==(const BlobIdentity&) const = default;
};

struct CacheEntry {
  std::string key;  // CacheKey::hex, or a client blob's key
  Artifact artifact;  // a blob: only artifact.bytes, the blob itself
  double compile_ms = 0;     // what a hit saves; summed into "compile time saved"
  int64_t created_unix = 0;  // seconds since the epoch, when it was compiled
  // Set for a client blob, in the metadata as ArtifactRecord.entry_kind and
  // blob_*; absent for every compiled artifact.
  std::optional<BlobIdentity> blob;
};

// The entry's Artifact as a pointer that keeps the whole entry alive: what a
// cache hit hands on without copying the payload.
inline std::shared_ptr<const Artifact> shared_artifact(std::shared_ptr<const CacheEntry> entry) {
  const Artifact* artifact = &entry->artifact;
  return std::shared_ptr<const Artifact>(std::move(entry), artifact);
}

// The first bytes of every entry; a file that starts otherwise is not ours.
inline constexpr std::string_view k_entry_magic = "KJITCACH";
// Bumped whenever the header or the metadata changes meaning. Each version
// has its own namespace (the disk tier's v<N> directory, the Redis tier's
// key prefix), so kjit versions sharing a cache never see each other's
// entries; one that still does (a damaged header) is treated as corrupt.
// 3: AMD code objects (artifact kind hsaco, SGPRs and wavefront size).
inline constexpr uint32_t k_entry_format_version = 3;
// Size of the fixed part of the header, before the key bytes.
inline constexpr size_t k_entry_header_bytes = 64;
// Bounds checked before anything is allocated, so a damaged size field can
// never make a reader allocate gigabytes.
inline constexpr size_t k_max_entry_key_bytes = 256;
inline constexpr uint64_t k_max_entry_metadata_bytes = 64ull << 20;

// Layout, all integers little-endian:
//   magic[8] version:u32 key_size:u32 metadata_size:u64 payload_size:u64
//   checksum[32] key[key_size] metadata[] payload[]
// checksum = XXH3-128(key || metadata || payload) in canonical
// (big-endian) form, then 16 zero bytes; metadata = kjit.internal.ArtifactRecord without its payload,
// every Artifact field but bytes (the payload), plus compile_ms and
// created_unix. A field added to Artifact gets a new field number there.
// XXH3 rather than SHA-256: the checksum detects damage (torn writes, bit
// rot), it authenticates nothing, since whoever can write an entry can write
// its checksum; at ~20 GB/s it is no longer the cost of a 256 KiB hit.
// (Format 1 used SHA-256 and JSON metadata: 0.5 ms of a 256 KiB hit.)
std::string encode_entry(const CacheEntry& entry);

// Parses and verifies an encoded entry. Every mismatch (magic, version, key,
// sizes, checksum, metadata) is an ErrorCode::internal error whose message
// starts with "corrupt entry: "; nothing in `bytes` can make it crash.
// An empty `expected_key` accepts whatever key the entry names.
Result<CacheEntry> decode_entry(std::string_view bytes, std::string_view expected_key);
// The same, reusing `bytes` (a file or a Redis value just read) as the
// payload's storage: no second allocation and copy of the payload, and no
// short-lived buffer the size of the entry left between long-lived ones.
Result<CacheEntry> decode_entry(std::string&& bytes, std::string_view expected_key);

// An entry's key and metadata without its payload, for a listing that says
// what an entry is (a blob's identity) without reading a large file whole.
// entry_head_size: how many first bytes decode_entry_head needs, from the
// fixed header (k_entry_header_bytes) and the entry's whole size. The head
// is not checked against the checksum, which covers the payload too: never
// serve what it reads (decode_entry does that). Errors as decode_entry's.
Result<uint64_t> entry_head_size(std::string_view header, uint64_t entry_bytes);
Result<CacheEntry> decode_entry_head(std::string_view head);

// True for errors produced by decode_entry, which callers count as
// corruptions rather than tier failures.
bool is_corrupt_entry_error(const Error& error);

}  // namespace kjit
