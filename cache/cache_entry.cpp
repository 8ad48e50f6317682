// Encoding and verification of cache entries (see cache_entry.h for the layout).
#include "cache_entry.h"

#include <openssl/evp.h>

#include <array>
#include <limits>
#include <nlohmann/json.hpp>

namespace kjit {
namespace {

using nlohmann::json;

constexpr size_t k_digest_bytes = 32;
constexpr size_t k_offset_version = 8;
constexpr size_t k_offset_key_size = 12;
constexpr size_t k_offset_metadata_size = 16;
constexpr size_t k_offset_payload_size = 24;
constexpr size_t k_offset_digest = 32;
static_assert(k_offset_digest + k_digest_bytes == k_entry_header_bytes);

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

std::array<unsigned char, k_digest_bytes> sha256(std::string_view bytes) {
  std::array<unsigned char, k_digest_bytes> digest{};
  unsigned size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return digest;
}

json dim3_to_json(const Dim3& d) {
  return json::array({d.x, d.y, d.z});
}

json kernel_to_json(const KernelInfo& k) {
  return json{{"name", k.name},
              {"lowered_name", k.lowered_name},
              {"registers", k.registers},
              {"static_shared_bytes", k.static_shared_bytes},
              {"shared_section_bytes", k.shared_section_bytes},
              {"local_bytes", k.local_bytes},
              {"max_threads_per_block", k.max_threads_per_block},
              {"required_threads", dim3_to_json(k.required_threads)},
              {"cluster_dims", dim3_to_json(k.cluster_dims)},
              {"max_registers", k.max_registers},
              {"param_bytes", k.param_bytes}};
}

std::string metadata_json(const CacheEntry& entry) {
  const Artifact& a = entry.artifact;
  json kernels = json::array();
  for (const KernelInfo& k : a.kernels) kernels.push_back(kernel_to_json(k));
  json timings = json::array();
  for (const StageTiming& t : a.timings) {
    json passes = json::array();
    for (const PassTiming& p : t.passes) passes.push_back(json{{"pass", p.pass}, {"ms", p.ms}});
    timings.push_back(json{{"stage", t.stage}, {"ms", t.ms}, {"passes", std::move(passes)}});
  }
  json key_components = json::array();
  for (const KeyComponent& c : a.key_components) key_components.push_back(json{{"name", c.name}, {"value", c.value}});
  json meta{{"kind", std::string(to_string(a.kind))},
            {"target", a.target},
            {"kernels", std::move(kernels)},
            {"lowered_names", a.lowered_names},
            {"timings", std::move(timings)},
            {"log", a.log},
            {"key", a.key},
            {"key_components", std::move(key_components)},
            {"pipeline", a.pipeline},
            {"notes", a.notes},
            {"compile_ms", entry.compile_ms},
            {"created_unix", entry.created_unix}};
  // Compiler logs are not guaranteed to be UTF-8; replacing bad sequences
  // keeps encoding infallible (nlohmann throws on them by default).
  return meta.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The reads below throw nlohmann::json::exception on a missing field or a
// wrong type; decode_entry turns that into a corrupt-entry error.
uint32_t read_u32(const json& j, const char* field) {
  const json& v = j.at(field);
  if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<uint32_t>::max())
    throw json::type_error::create(302, std::string(field) + " is not a u32", &v);
  return v.get<uint32_t>();
}

Dim3 read_dim3(const json& j, const char* field) {
  const json& v = j.at(field);
  if (!v.is_array() || v.size() != 3) throw json::type_error::create(302, std::string(field) + " is not a dim3", &v);
  auto component = [&](size_t i) {
    if (!v[i].is_number_unsigned() || v[i].get<uint64_t>() > std::numeric_limits<uint32_t>::max())
      throw json::type_error::create(302, std::string(field) + " component is not a u32", &v);
    return v[i].get<uint32_t>();
  };
  return Dim3{component(0), component(1), component(2)};
}

KernelInfo kernel_from_json(const json& j) {
  KernelInfo k;
  k.name = j.at("name").get<std::string>();
  k.lowered_name = j.at("lowered_name").get<std::string>();
  k.registers = read_u32(j, "registers");
  k.static_shared_bytes = read_u32(j, "static_shared_bytes");
  k.shared_section_bytes = read_u32(j, "shared_section_bytes");
  k.local_bytes = read_u32(j, "local_bytes");
  k.max_threads_per_block = read_u32(j, "max_threads_per_block");
  k.required_threads = read_dim3(j, "required_threads");
  k.cluster_dims = read_dim3(j, "cluster_dims");
  k.max_registers = read_u32(j, "max_registers");
  k.param_bytes = read_u32(j, "param_bytes");
  return k;
}

Result<CacheEntry> entry_from_metadata(std::string_view metadata, std::string key, std::string_view payload) {
  json meta = json::parse(metadata, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object()) return corrupt("metadata is not a JSON object");
  try {
    CacheEntry entry;
    entry.key = std::move(key);
    Artifact& a = entry.artifact;
    std::optional<ArtifactKind> kind = parse_artifact_kind(meta.at("kind").get<std::string>());
    if (!kind) return corrupt("unknown artifact kind");
    a.kind = *kind;
    a.target = meta.at("target").get<std::string>();
    for (const json& k : meta.at("kernels")) a.kernels.push_back(kernel_from_json(k));
    a.lowered_names = meta.at("lowered_names").get<std::map<std::string, std::string>>();
    for (const json& t : meta.at("timings")) {
      StageTiming& timing = a.timings.emplace_back();
      timing.stage = t.at("stage").get<std::string>();
      timing.ms = t.at("ms").get<double>();
      for (const json& p : t.at("passes"))
        timing.passes.push_back(PassTiming{p.at("pass").get<std::string>(), p.at("ms").get<double>()});
    }
    a.log = meta.at("log").get<std::string>();
    a.key = meta.at("key").get<std::string>();
    for (const json& c : meta.at("key_components"))
      a.key_components.push_back(KeyComponent{c.at("name").get<std::string>(), c.at("value").get<std::string>()});
    a.pipeline = meta.at("pipeline").get<std::string>();
    a.notes = meta.at("notes").get<std::vector<std::string>>();
    a.bytes.assign(payload);
    entry.compile_ms = meta.at("compile_ms").get<double>();
    entry.created_unix = meta.at("created_unix").get<int64_t>();
    return entry;
  } catch (const json::exception& e) {
    return corrupt(std::string("metadata: ") + e.what());
  }
}

}  // namespace

std::string encode_entry(const CacheEntry& entry) {
  const std::string metadata = metadata_json(entry);
  const std::string& payload = entry.artifact.bytes;
  std::string out(k_entry_header_bytes, '\0');
  out.reserve(k_entry_header_bytes + entry.key.size() + metadata.size() + payload.size());
  out.replace(0, k_entry_magic.size(), k_entry_magic);
  store_le<uint32_t>(out, k_offset_version, k_entry_format_version);
  store_le<uint32_t>(out, k_offset_key_size, static_cast<uint32_t>(entry.key.size()));
  store_le<uint64_t>(out, k_offset_metadata_size, metadata.size());
  store_le<uint64_t>(out, k_offset_payload_size, payload.size());
  out += entry.key;
  const size_t body_offset = out.size();
  out += metadata;
  out += payload;
  // Metadata and payload are contiguous, so one pass hashes both.
  auto digest = sha256(std::string_view(out).substr(body_offset));
  out.replace(k_offset_digest, k_digest_bytes, reinterpret_cast<const char*>(digest.data()), k_digest_bytes);
  return out;
}

Result<CacheEntry> decode_entry(std::string_view bytes, std::string_view expected_key) {
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
  std::string_view body = bytes.substr(k_entry_header_bytes + key_size);
  auto digest = sha256(body);
  if (bytes.substr(k_offset_digest, k_digest_bytes) !=
      std::string_view(reinterpret_cast<const char*>(digest.data()), k_digest_bytes))
    return corrupt("checksum mismatch");
  return entry_from_metadata(body.substr(0, metadata_size), std::string(key), body.substr(metadata_size));
}

bool is_corrupt_entry_error(const Error& error) {
  return error.code == ErrorCode::internal && std::string_view(error.message).starts_with(k_corrupt_prefix);
}

}  // namespace kjit
