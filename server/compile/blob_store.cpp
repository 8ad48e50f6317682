// Client blobs over the cache tiers (see blob_store.h).
#include "server/compile/blob_store.h"

#include <algorithm>
#include <ctime>

#include "pipeline/cache_key.h"

namespace kjit {
namespace {

std::string quoted(std::string_view value) {
  constexpr size_t k_quoted = 80;
  std::string out(value.substr(0, k_quoted));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (value.size() > k_quoted) out += "...";
  return out;
}

}  // namespace

Status check_blob_field(std::string_view field, std::string_view value, bool is_file_name) {
  auto bad = [&](std::string_view why) {
    return make_error(ErrorCode::invalid_argument,
                      std::string(field) + " '" + quoted(value) + "' " + std::string(why));
  };
  if (value.empty()) return bad("is empty");
  if (value.size() > k_max_blob_field_bytes)
    return bad("is longer than " + std::to_string(k_max_blob_field_bytes) + " bytes");
  if (value.find('\0') != std::string_view::npos) return bad("contains a NUL byte");
  if (!is_file_name) return Ok{};
  // Names become file names in the client's cache directory.
  if (value.find('/') != std::string_view::npos) return bad("contains '/'");
  if (value == "." || value.find("..") != std::string_view::npos) return bad("contains '..' or is '.'");
  if (std::any_of(value.begin(), value.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return bad("contains a control character");
  return Ok{};
}

BlobStore::BlobStore(uint64_t max_blob_bytes, std::shared_ptr<KeyClaims> claims, BlobClaimLimits claim_limits)
    : max_blob_bytes_(max_blob_bytes),
      claims_(claims ? std::make_unique<BlobClaims>(std::move(claims), claim_limits) : nullptr) {}

BlobStore::~BlobStore() = default;

Status BlobStore::check_identity(std::string_view ns, std::string_view key, std::string_view name) const {
  if (Status s = check_blob_field("namespace", ns, false); !s) return s;
  if (Status s = check_blob_field("key", key, false); !s) return s;
  return check_blob_field("name", name, true);
}

std::optional<BlobHit> BlobStore::lookup(const NamespacedCache& blobs, const BlobIdentity& identity) {
  std::optional<CacheHit> hit = blobs.get(blob_cache_key(identity.kind, identity.ns, identity.key, identity.name));
  // Anything else under this key (no blob marker, another identity) is
  // not this blob; it is left alone, as its owner may still want it.
  if (!hit || !hit->entry->blob || *hit->entry->blob != identity) return std::nullopt;
  return BlobHit{std::move(hit->entry), hit->tier};
}

Result<BlobPutOutcome> BlobStore::store(const NamespacedCache& blobs, CacheEntry entry, BlobPutMode mode) {
  BlobPutOutcome outcome{.cache_key = entry.key};
  if (std::optional<BlobHit> stored = lookup(blobs, *entry.blob)) {
    // The same bytes: nothing to change, whatever was asked.
    if (stored->entry->artifact.bytes == entry.artifact.bytes) {
      outcome.already_stored = true;
      return outcome;
    }
    if (!mode.replace) {
      outcome.already_stored = true;
      outcome.conflict = true;
      ++put_conflicts_;
      return outcome;
    }
    if (mode.shared_namespace) {
      ++put_conflicts_;
      return make_error(ErrorCode::failed_precondition,
                        "blob '" + quoted(entry.blob->name) + "' of key '" + quoted(entry.blob->key) +
                            "' holds other bytes in a namespace a [[blob_sharing]] entry shares, where a blob keeps "
                            "its first writer's bytes (another member may be using them); remove it first to store "
                            "other bytes (kjit cache rm " + entry.key + ")");
    }
    outcome.replaced = true;
  }
  // One put to each tier, each of which swaps a stored entry whole.
  blobs.put(std::move(entry));
  return outcome;
}

Result<BlobPutOutcome> BlobStore::put(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                                      std::string_view name, std::string data, BlobPutMode mode) {
  if (Status s = check_identity(ns, key, name); !s) return s.error();
  if (data.size() > max_blob_bytes_)
    return make_error(ErrorCode::resource_exhausted, "blob '" + quoted(name) + "' has " + std::to_string(data.size()) +
                                                         " bytes, over the limit of " +
                                                         std::to_string(max_blob_bytes_) + " (max_blob_bytes)");
  CacheEntry entry;
  entry.blob = BlobIdentity{std::string(k_blob_kind), std::string(ns), std::string(key), std::string(name)};
  entry.key = blob_cache_key(k_blob_kind, ns, key, name);
  entry.created_unix = static_cast<int64_t>(std::time(nullptr));
  const uint64_t size = data.size();
  entry.artifact.bytes = std::move(data);
  ++puts_;
  put_bytes_ += size;
  return store(blobs, std::move(entry), mode);
}

Result<std::optional<BlobHit>> BlobStore::get(const NamespacedCache& blobs, std::string_view ns,
                                              std::string_view key, std::string_view name) {
  if (Status s = check_identity(ns, key, name); !s) return s.error();
  ++gets_;
  std::optional<BlobHit> hit =
      lookup(blobs, BlobIdentity{std::string(k_blob_kind), std::string(ns), std::string(key), std::string(name)});
  ++(hit ? hits_ : misses_);
  return hit;
}

Result<BlobPutOutcome> BlobStore::put_group(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                                            std::string_view group, const std::vector<std::string>& names) {
  if (Status s = check_identity(ns, key, group); !s) return s.error();
  if (names.size() > k_max_blob_group_names)
    return make_error(ErrorCode::invalid_argument, "a group has at most " + std::to_string(k_max_blob_group_names) +
                                                       " names, not " + std::to_string(names.size()));
  for (const std::string& name : names)
    if (Status s = check_blob_field("name", name, true); !s) return s.error();
  CacheEntry entry;
  entry.blob = BlobIdentity{std::string(k_blob_group_kind), std::string(ns), std::string(key), std::string(group)};
  entry.key = blob_cache_key(k_blob_group_kind, ns, key, group);
  entry.created_unix = static_cast<int64_t>(std::time(nullptr));
  entry.artifact.bytes = encode_blob_group_names(names);
  ++groups_put_;
  Result<BlobPutOutcome> outcome = store(blobs, std::move(entry), BlobPutMode{});
  // Whoever put it, whether or not it was there already: the group is
  // there, so nobody need wait for a claim on it any longer.
  if (claims_) claims_->fulfil(blobs, ns, key, group);
  return outcome;
}

Result<BlobGroupAnswer> BlobStore::get_group(const NamespacedCache& blobs, std::string_view ns,
                                             std::string_view key, std::string_view group) {
  if (Status s = check_identity(ns, key, group); !s) return s.error();
  ++group_gets_;
  BlobGroupAnswer answer;
  std::optional<BlobHit> manifest =
      lookup(blobs,
             BlobIdentity{std::string(k_blob_group_kind), std::string(ns), std::string(key), std::string(group)});
  if (!manifest) return answer;
  answer.found = true;
  uint64_t budget_used = 0;
  for (std::string& name : decode_blob_group_names(manifest->entry->artifact.bytes)) {
    // Names become file names on the client: one that was not checked on
    // the way in (an entry written by other means) never goes out.
    if (!check_blob_field("name", name, true)) continue;
    ++gets_;
    std::optional<BlobHit> hit =
        lookup(blobs, BlobIdentity{std::string(k_blob_kind), std::string(ns), std::string(key), name});
    if (!hit) {
      ++misses_;
      answer.missing.push_back(std::move(name));
      continue;
    }
    ++hits_;
    const uint64_t size = hit->entry->artifact.bytes.size();
    if (!answer.members.empty() && budget_used + size > max_blob_bytes_) {
      answer.deferred.push_back(std::move(name));
      continue;
    }
    budget_used += size;
    answer.members.emplace_back(std::move(name), std::move(*hit));
  }
  if (answer.missing.empty()) ++group_hits_;
  return answer;
}

BlobStats BlobStore::stats() const {
  BlobStats out;
  out.puts = puts_;
  out.put_bytes = put_bytes_;
  out.gets = gets_;
  out.hits = hits_;
  out.misses = misses_;
  out.groups_put = groups_put_;
  out.group_gets = group_gets_;
  out.group_hits = group_hits_;
  out.put_conflicts = put_conflicts_;
  if (claims_) claims_->add_counts(out);
  return out;
}

}  // namespace kjit
