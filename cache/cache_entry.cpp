// Encoding and verification of cache entries (see cache_entry.h for the layout).
#include "cache/cache_entry.h"

#include <xxhash.h>

#include <algorithm>

#include "cache/little_endian.h"
#include "convert/artifact_record.h"

namespace kjit {
namespace {

constexpr size_t k_checksum_field_bytes = 32;
constexpr size_t k_xxh128_bytes = sizeof(XXH128_canonical_t);
constexpr size_t k_offset_version = 8;
constexpr size_t k_offset_key_size = 12;
constexpr size_t k_offset_metadata_size = 16;
constexpr size_t k_offset_payload_size = 24;
constexpr size_t k_offset_checksum = 32;
static_assert(k_offset_checksum + k_checksum_field_bytes == k_entry_header_bytes);
static_assert(k_xxh128_bytes == 16);

constexpr std::string_view k_corrupt_prefix = "corrupt entry: ";

Error corrupt(std::string_view what) {
  return make_error(ErrorCode::internal, std::string(k_corrupt_prefix) + std::string(what));
}

// Format 2's checksum field: the canonical XXH3-128 of `body`, zero-padded.
std::string checksum_field(std::string_view body) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(body.data(), body.size()));
  std::string field(k_checksum_field_bytes, '\0');
  std::copy_n(reinterpret_cast<const char*>(canonical.digest), k_xxh128_bytes, field.begin());
  return field;
}

std::string metadata_bytes(const CacheEntry& entry) {
  internal::ArtifactRecord record;
  if (entry.blob) {
    // A blob has no artifact fields; the kind marker is what tells a reader
    // not to look for them.
    record.set_entry_kind(entry.blob->kind);
    record.set_blob_namespace(entry.blob->ns);
    record.set_blob_key(entry.blob->key);
    record.set_blob_name(entry.blob->name);
    record.set_created_unix(entry.created_unix);
    return record.SerializeAsString();
  }
  to_record(entry.artifact, record);
  record.set_compile_ms(entry.compile_ms);
  record.set_created_unix(entry.created_unix);
  return record.SerializeAsString();
}

// Where a verified entry's parts are: everything decode_entry checked.
struct EntryLayout {
  std::string_view key;
  std::string_view metadata;
  size_t payload_offset = 0;
};

Result<CacheEntry> entry_from_metadata(std::string_view metadata, std::string key, std::string_view payload) {
  internal::ArtifactRecord record;
  if (!record.ParseFromArray(metadata.data(), static_cast<int>(metadata.size())))
    return corrupt("metadata does not parse");
  // The payload is the entry's, never the record's.
  record.clear_payload();
  CacheEntry entry;
  entry.key = std::move(key);
  entry.compile_ms = record.compile_ms();
  entry.created_unix = record.created_unix();
  if (!record.entry_kind().empty()) {
    entry.blob = BlobIdentity{std::move(*record.mutable_entry_kind()), std::move(*record.mutable_blob_namespace()),
                              std::move(*record.mutable_blob_key()), std::move(*record.mutable_blob_name())};
    entry.artifact.bytes.assign(payload);
    return entry;
  }
  Result<Artifact> artifact = from_record(std::move(record));
  if (!artifact) return corrupt(artifact.error().message);
  entry.artifact = std::move(artifact.value());
  entry.artifact.bytes.assign(payload);
  return entry;
}

Result<EntryLayout> verify_entry(std::string_view bytes, std::string_view expected_key);

}  // namespace

std::string encode_entry(const CacheEntry& entry) {
  const std::string metadata = metadata_bytes(entry);
  const std::string& payload = entry.artifact.bytes;
  std::string out(k_entry_header_bytes, '\0');
  out.reserve(k_entry_header_bytes + entry.key.size() + metadata.size() + payload.size());
  out.replace(0, k_entry_magic.size(), k_entry_magic);
  store_le<uint32_t>(out, k_offset_version, k_entry_format_version);
  store_le<uint32_t>(out, k_offset_key_size, static_cast<uint32_t>(entry.key.size()));
  store_le<uint64_t>(out, k_offset_metadata_size, metadata.size());
  store_le<uint64_t>(out, k_offset_payload_size, payload.size());
  out += entry.key;
  out += metadata;
  out += payload;
  // Key, metadata and payload are contiguous, so one pass covers all three.
  out.replace(k_offset_checksum, k_checksum_field_bytes,
              checksum_field(std::string_view(out).substr(k_entry_header_bytes)));
  return out;
}

Result<CacheEntry> decode_entry(std::string_view bytes, std::string_view expected_key) {
  Result<EntryLayout> layout = verify_entry(bytes, expected_key);
  if (!layout) return layout.error();
  return entry_from_metadata(layout->metadata, std::string(layout->key), bytes.substr(layout->payload_offset));
}

Result<CacheEntry> decode_entry(std::string&& bytes, std::string_view expected_key) {
  Result<EntryLayout> layout = verify_entry(bytes, expected_key);
  if (!layout) return layout.error();
  Result<CacheEntry> entry = entry_from_metadata(layout->metadata, std::string(layout->key), {});
  if (!entry) return entry;
  bytes.erase(0, layout->payload_offset);  // a move within the buffer, no allocation
  entry->artifact.bytes = std::move(bytes);
  return entry;
}

namespace {

// The header's sizes, checked against the entry's length.
struct EntrySizes {
  uint64_t key = 0, metadata = 0;
};

Result<EntrySizes> check_header(std::string_view header, uint64_t entry_bytes) {
  if (header.size() < k_entry_header_bytes || entry_bytes < k_entry_header_bytes)
    return corrupt("shorter than its header");
  if (header.substr(0, k_entry_magic.size()) != k_entry_magic) return corrupt("bad magic");
  const uint32_t version = load_le<uint32_t>(header, k_offset_version);
  if (version != k_entry_format_version)
    return corrupt("format version " + std::to_string(version) + ", expected " +
                   std::to_string(k_entry_format_version));
  const uint64_t key_size = load_le<uint32_t>(header, k_offset_key_size);
  const uint64_t metadata_size = load_le<uint64_t>(header, k_offset_metadata_size);
  const uint64_t payload_size = load_le<uint64_t>(header, k_offset_payload_size);
  // Checked one at a time against what is left, so no sum can overflow.
  uint64_t left = entry_bytes - k_entry_header_bytes;
  if (key_size > k_max_entry_key_bytes || key_size > left) return corrupt("bad key size");
  left -= key_size;
  if (metadata_size > k_max_entry_metadata_bytes || metadata_size > left) return corrupt("bad metadata size");
  left -= metadata_size;
  if (payload_size != left) return corrupt("payload size does not match the entry's length");
  return EntrySizes{key_size, metadata_size};
}

}  // namespace

Result<uint64_t> entry_head_size(std::string_view header, uint64_t entry_bytes) {
  Result<EntrySizes> sizes = check_header(header, entry_bytes);
  if (!sizes) return sizes.error();
  return k_entry_header_bytes + sizes->key + sizes->metadata;
}

Result<CacheEntry> decode_entry_head(std::string_view head) {
  if (head.size() < k_entry_header_bytes) return corrupt("shorter than its header");
  const uint64_t key_size = load_le<uint32_t>(head, k_offset_key_size);
  const uint64_t metadata_size = load_le<uint64_t>(head, k_offset_metadata_size);
  const uint64_t payload_size = load_le<uint64_t>(head, k_offset_payload_size);
  // The whole entry's length as the header states it: a head is the entry's first bytes.
  if (key_size > k_max_entry_key_bytes || metadata_size > k_max_entry_metadata_bytes ||
      payload_size > UINT64_MAX - k_entry_header_bytes - key_size - metadata_size)
    return corrupt("bad sizes");
  Result<EntrySizes> sizes =
      check_header(head, k_entry_header_bytes + key_size + metadata_size + payload_size);
  if (!sizes) return sizes.error();
  if (head.size() != k_entry_header_bytes + sizes->key + sizes->metadata)
    return corrupt("head is not the header, key and metadata");
  return entry_from_metadata(head.substr(k_entry_header_bytes + sizes->key, sizes->metadata),
                             std::string(head.substr(k_entry_header_bytes, sizes->key)), {});
}

namespace {

Result<EntryLayout> verify_entry(std::string_view bytes, std::string_view expected_key) {
  Result<EntrySizes> sizes = check_header(bytes, bytes.size());
  if (!sizes) return sizes.error();
  const uint64_t key_size = sizes->key;
  const uint64_t metadata_size = sizes->metadata;

  std::string_view key = bytes.substr(k_entry_header_bytes, key_size);
  if (!expected_key.empty() && key != expected_key) return corrupt("holds another key");
  if (bytes.substr(k_offset_checksum, k_checksum_field_bytes) != checksum_field(bytes.substr(k_entry_header_bytes)))
    return corrupt("checksum mismatch");
  const size_t metadata_offset = k_entry_header_bytes + key_size;
  return EntryLayout{key, bytes.substr(metadata_offset, metadata_size), metadata_offset + metadata_size};
}

}  // namespace

bool is_corrupt_entry_error(const Error& error) {
  return error.code == ErrorCode::internal && std::string_view(error.message).starts_with(k_corrupt_prefix);
}

}  // namespace kjit
