#include "server/compile/namespaced_cache.h"

namespace kjit {
namespace {

constexpr std::string_view k_namespace_marker = "-n-";
constexpr std::string_view k_tag_marker = "-c";
constexpr size_t k_tag_digits = 32;

Error disk_off() { return make_error(ErrorCode::failed_precondition, "the disk cache tier is off on this daemon"); }

}  // namespace

std::string namespaced_key(std::string_view key, std::string_view ns, const NamesKey* names_key) {
  std::string out(key);
  if (names_key) {
    out += k_tag_marker;
    out += blob_file_tag(*names_key, key);
  }
  if (ns.empty()) return out;
  out += k_namespace_marker;
  out += ns;
  return out;
}

NamespacedKey split_namespaced_key(std::string_view stored) {
  // Bare keys (compile keys, blob keys) never hold the marker: they are hex
  // digits with at most a "-blob" suffix.
  const size_t marker = stored.find(k_namespace_marker);
  NamespacedKey out{{}, stored.substr(0, marker)};
  if (marker != std::string_view::npos) out.ns = stored.substr(marker + k_namespace_marker.size());
  // Nor do they end in "-c" and 32 hex digits: that is a tag.
  constexpr size_t tag_size = k_tag_marker.size() + k_tag_digits;
  if (out.key.size() <= tag_size) return out;
  const std::string_view tag = out.key.substr(out.key.size() - tag_size);
  if (tag.starts_with(k_tag_marker) &&
      tag.substr(k_tag_marker.size()).find_first_not_of("0123456789abcdef") == std::string_view::npos) {
    out.key.remove_suffix(tag_size);
    out.tagged = true;
  }
  return out;
}

std::optional<CacheHit> NamespacedCache::get(std::string_view key) const {
  std::optional<CacheHit> hit = tiers_->get(stored_key(key));
  if (counters_) {
    if (hit)
      counters_->count(hit->tier, hit->entry->compile_ms);
    else
      ++counters_->misses;
  }
  return hit;
}

std::optional<CacheHit> NamespacedCache::get_from_memory(std::string_view key) const {
  std::optional<CacheHit> hit = tiers_->get_from_memory(stored_key(key));
  // A miss here is counted by the lookup that follows it, as the tiers do.
  if (hit && counters_) counters_->count(hit->tier, hit->entry->compile_ms);
  return hit;
}

std::shared_ptr<const CacheEntry> NamespacedCache::put(CacheEntry entry) const {
  entry.key = stored_key(entry.key);
  return tiers_->put(std::move(entry));
}

void NamespacedCache::remove(std::string_view key) const { tiers_->remove(stored_key(key)); }

Result<CacheOutcome> NamespacedCache::get_or_compile(std::string_view key,
                                                     const CompileCoalescer::Compile& compile) const {
  if (!once_) return make_error(ErrorCode::internal, "this view of the cache compiles nothing");
  Result<CacheOutcome> outcome = once_->get_or_compile(stored_key(key), compile);
  if (outcome && counters_) counters_->count(outcome->source, outcome->entry ? outcome->entry->compile_ms : 0);
  return outcome;
}

Result<std::vector<StoredKey>> NamespacedCache::list() const {
  if (!disk_) return disk_off();
  Result<std::vector<StoredKey>> stored = disk_->list();
  if (!stored) return stored.error();
  std::vector<StoredKey> own;
  for (StoredKey& entry : *stored) {
    const NamespacedKey split = split_namespaced_key(entry.key);
    if (split.ns != ns_) continue;
    entry.key = std::string(split.key);
    own.push_back(std::move(entry));
  }
  return own;
}

Result<std::optional<BlobIdentity>> NamespacedCache::blob_on_disk(std::string_view key) const {
  if (!disk_) return disk_off();
  Result<std::optional<CacheEntry>> head = disk_->read_head(stored_key(key));
  if (!head) return head.error();
  if (!head->has_value() || !(*head)->blob) return std::optional<BlobIdentity>();
  return std::optional<BlobIdentity>(std::move(*(*head)->blob));
}

Result<DiskStore::GcReport> NamespacedCache::gc(uint64_t max_bytes) const {
  if (!disk_) return disk_off();
  return disk_->gc(max_bytes, [this](std::string_view stored) { return split_namespaced_key(stored).ns == ns_; });
}

}  // namespace kjit
