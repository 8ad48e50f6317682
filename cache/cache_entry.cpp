// Encoding and verification of cache entries (see cache_entry.h for the layout).
#include "cache_entry.h"

#include <xxhash.h>

#include <algorithm>

#include "cache/entry_metadata.pb.h"

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

template <typename T>
void store_le(std::string& out, size_t offset, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

template <typename T>
T load_le(std::string_view bytes, size_t offset) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

// Format 2's checksum field: the canonical XXH3-128 of `body`, zero-padded.
std::string checksum_field(std::string_view body) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(body.data(), body.size()));
  std::string field(k_checksum_field_bytes, '\0');
  std::copy_n(reinterpret_cast<const char*>(canonical.digest), k_xxh128_bytes, field.begin());
  return field;
}

void to_proto(const Dim3& d, cache::Dim3& out) {
  out.set_x(d.x);
  out.set_y(d.y);
  out.set_z(d.z);
}

Dim3 from_proto(const cache::Dim3& d) { return Dim3{d.x(), d.y(), d.z()}; }

std::string metadata_bytes(const CacheEntry& entry) {
  const Artifact& a = entry.artifact;
  cache::EntryMetadata meta;
  meta.set_kind(std::string(to_string(a.kind)));
  meta.set_target(a.target);
  for (const KernelInfo& k : a.kernels) {
    cache::Kernel& out = *meta.add_kernels();
    out.set_name(k.name);
    out.set_lowered_name(k.lowered_name);
    out.set_registers(k.registers);
    out.set_static_shared_bytes(k.static_shared_bytes);
    out.set_shared_section_bytes(k.shared_section_bytes);
    out.set_local_bytes(k.local_bytes);
    out.set_max_threads_per_block(k.max_threads_per_block);
    to_proto(k.required_threads, *out.mutable_required_threads());
    to_proto(k.cluster_dims, *out.mutable_cluster_dims());
    out.set_max_registers(k.max_registers);
    out.set_param_bytes(k.param_bytes);
  }
  for (const auto& [expression, symbol] : a.lowered_names) {
    cache::LoweredName& out = *meta.add_lowered_names();
    out.set_expression(expression);
    out.set_symbol(symbol);
  }
  for (const StageTiming& t : a.timings) {
    cache::StageTiming& out = *meta.add_timings();
    out.set_stage(t.stage);
    out.set_ms(t.ms);
    for (const PassTiming& p : t.passes) {
      cache::PassTiming& pass = *out.add_passes();
      pass.set_pass(p.pass);
      pass.set_ms(p.ms);
    }
  }
  meta.set_log(a.log);
  meta.set_key(a.key);
  for (const KeyComponent& c : a.key_components) {
    cache::KeyComponent& out = *meta.add_key_components();
    out.set_name(c.name);
    out.set_value(c.value);
  }
  meta.set_pipeline(a.pipeline);
  for (const std::string& note : a.notes) meta.add_notes(note);
  meta.set_compile_ms(entry.compile_ms);
  meta.set_created_unix(entry.created_unix);
  return meta.SerializeAsString();
}

// Where a verified entry's parts are: everything decode_entry checked.
struct EntryLayout {
  std::string_view key;
  std::string_view metadata;
  size_t payload_offset = 0;
};

Result<CacheEntry> entry_from_metadata(std::string_view metadata, std::string key, std::string_view payload) {
  cache::EntryMetadata meta;
  if (!meta.ParseFromArray(metadata.data(), static_cast<int>(metadata.size())))
    return corrupt("metadata does not parse");
  std::optional<ArtifactKind> kind = parse_artifact_kind(meta.kind());
  if (!kind) return corrupt("unknown artifact kind '" + meta.kind() + "'");
  CacheEntry entry;
  entry.key = std::move(key);
  entry.compile_ms = meta.compile_ms();
  entry.created_unix = meta.created_unix();
  Artifact& a = entry.artifact;
  a.kind = *kind;
  a.target = std::move(*meta.mutable_target());
  a.kernels.reserve(meta.kernels_size());
  for (cache::Kernel& k : *meta.mutable_kernels()) {
    KernelInfo& out = a.kernels.emplace_back();
    out.name = std::move(*k.mutable_name());
    out.lowered_name = std::move(*k.mutable_lowered_name());
    out.registers = k.registers();
    out.static_shared_bytes = k.static_shared_bytes();
    out.shared_section_bytes = k.shared_section_bytes();
    out.local_bytes = k.local_bytes();
    out.max_threads_per_block = k.max_threads_per_block();
    out.required_threads = from_proto(k.required_threads());
    out.cluster_dims = from_proto(k.cluster_dims());
    out.max_registers = k.max_registers();
    out.param_bytes = k.param_bytes();
  }
  for (cache::LoweredName& n : *meta.mutable_lowered_names())
    a.lowered_names.emplace(std::move(*n.mutable_expression()), std::move(*n.mutable_symbol()));
  for (cache::StageTiming& t : *meta.mutable_timings()) {
    StageTiming& out = a.timings.emplace_back();
    out.stage = std::move(*t.mutable_stage());
    out.ms = t.ms();
    for (cache::PassTiming& p : *t.mutable_passes()) out.passes.push_back(PassTiming{std::move(*p.mutable_pass()), p.ms()});
  }
  a.log = std::move(*meta.mutable_log());
  a.key = std::move(*meta.mutable_key());
  for (cache::KeyComponent& c : *meta.mutable_key_components())
    a.key_components.push_back(KeyComponent{std::move(*c.mutable_name()), std::move(*c.mutable_value())});
  a.pipeline = std::move(*meta.mutable_pipeline());
  for (std::string& note : *meta.mutable_notes()) a.notes.push_back(std::move(note));
  a.bytes.assign(payload);
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

Result<EntryLayout> verify_entry(std::string_view bytes, std::string_view expected_key) {
  if (bytes.size() < k_entry_header_bytes) return corrupt("shorter than its header");
  if (bytes.substr(0, k_entry_magic.size()) != k_entry_magic) return corrupt("bad magic");
  const uint32_t version = load_le<uint32_t>(bytes, k_offset_version);
  if (version != k_entry_format_version)
    return corrupt("format version " + std::to_string(version) + ", expected " +
                   std::to_string(k_entry_format_version));
  const uint64_t key_size = load_le<uint32_t>(bytes, k_offset_key_size);
  const uint64_t metadata_size = load_le<uint64_t>(bytes, k_offset_metadata_size);
  const uint64_t payload_size = load_le<uint64_t>(bytes, k_offset_payload_size);
  // Checked one at a time against what is left, so no sum can overflow.
  uint64_t left = bytes.size() - k_entry_header_bytes;
  if (key_size > k_max_entry_key_bytes || key_size > left) return corrupt("bad key size");
  left -= key_size;
  if (metadata_size > k_max_entry_metadata_bytes || metadata_size > left) return corrupt("bad metadata size");
  left -= metadata_size;
  if (payload_size != left) return corrupt("payload size does not match the entry's length");

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
