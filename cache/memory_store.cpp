// Sharded, byte-bounded LRU (see memory_store.h).
#include "cache/memory_store.h"

#include <malloc.h>

#include <chrono>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/clock.h"

namespace kjit {
namespace {

// Map nodes, list nodes, shared_ptr control block and string headers: a
// rough figure that keeps a flood of tiny entries from being free.
constexpr uint64_t k_entry_overhead_bytes = 256;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Returns free pages in every arena to the system. glibc only; elsewhere
// the allocator's own policy stands.
void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}


}  // namespace

struct MemoryStore::Shard {
  struct Node {
    std::shared_ptr<const CacheEntry> entry;
    uint64_t bytes = 0;
    int64_t last_access_unix = 0;
  };
  using Lru = std::list<Node>;  // front: most recently used

  // Counters live under the shard's own lock, so the hit path touches no
  // memory shared with other shards.
  mutable std::mutex mutex;
  Lru lru;
  std::unordered_map<std::string, Lru::iterator, StringHash, std::equal_to<>> index;
  uint64_t bytes = 0;
  uint64_t hits = 0, misses = 0, puts = 0, evictions = 0;

  void erase(Lru::iterator it) {
    bytes -= it->bytes;
    index.erase(it->entry->key);
    lru.erase(it);
  }
};

MemoryStore::MemoryStore(Options options) : options_(options) {
  if (options_.shards == 0) options_.shards = 1;
  shard_max_bytes_ = options_.max_bytes / options_.shards;
  shards_.reserve(options_.shards);
  for (size_t i = 0; i < options_.shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shard_for(std::string_view key) const {
  return *shards_[std::hash<std::string_view>{}(key) % shards_.size()];
}

uint64_t MemoryStore::footprint(const CacheEntry& entry) {
  const Artifact& a = entry.artifact;
  uint64_t bytes = k_entry_overhead_bytes + 2 * entry.key.size() + a.bytes.size() + a.target.size() + a.log.size();
  for (const KernelInfo& k : a.kernels) bytes += sizeof(KernelInfo) + k.name.size() + k.lowered_name.size();
  for (const auto& [name, symbol] : a.lowered_names) bytes += 64 + name.size() + symbol.size();
  for (const StageTiming& t : a.timings) {
    bytes += sizeof(StageTiming) + t.stage.size();
    for (const PassTiming& p : t.passes) bytes += sizeof(PassTiming) + p.pass.size();
  }
  for (const KeyComponent& c : a.key_components) bytes += sizeof(KeyComponent) + c.name.size() + c.value.size();
  for (const std::string& note : a.notes) bytes += sizeof(std::string) + note.size();
  bytes += a.key.size() + a.pipeline.size();
  return bytes;
}

std::shared_ptr<const CacheEntry> MemoryStore::find(std::string_view key) {
  return find_counting(key, /*count_miss=*/true);
}

std::shared_ptr<const CacheEntry> MemoryStore::find_if_present(std::string_view key) {
  return find_counting(key, /*count_miss=*/false);
}

std::shared_ptr<const CacheEntry> MemoryStore::find_counting(std::string_view key, bool count_miss) {
  Shard& shard = shard_for(key);
  std::lock_guard lock(shard.mutex);
  auto it = shard.index.find(key);
  if (it == shard.index.end()) {
    if (count_miss) ++shard.misses;
    return nullptr;
  }
  ++shard.hits;
  shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
  it->second->last_access_unix = unix_seconds_now();
  return it->second->entry;
}

std::shared_ptr<const CacheEntry> MemoryStore::peek(std::string_view key) const {
  Shard& shard = shard_for(key);
  std::lock_guard lock(shard.mutex);
  auto it = shard.index.find(key);
  return it == shard.index.end() ? nullptr : it->second->entry;
}

void MemoryStore::insert(std::shared_ptr<const CacheEntry> entry) {
  const uint64_t bytes = footprint(*entry);
  Shard& shard = shard_for(entry->key);
  std::shared_ptr<const CacheEntry> replaced;  // released after the lock
  uint64_t evicted_bytes = 0;
  {
    std::lock_guard lock(shard.mutex);
    ++shard.puts;
    if (auto it = shard.index.find(entry->key); it != shard.index.end()) {
      replaced = it->second->entry;
      shard.erase(it->second);
    }
    // Larger than the shard's whole budget: keeping it would evict everything.
    if (bytes > shard_max_bytes_) return;
    shard.lru.push_front(Shard::Node{entry, bytes, unix_seconds_now()});
    shard.index.emplace(entry->key, shard.lru.begin());
    shard.bytes += bytes;
    while (shard.bytes > shard_max_bytes_) {
      evicted_bytes += std::prev(shard.lru.end())->bytes;
      shard.erase(std::prev(shard.lru.end()));
      ++shard.evictions;
    }
  }
  if (options_.release_memory_every == 0 || evicted_bytes == 0) return;
  // One caller per threshold crossing trims; the others go on.
  if (evicted_since_release_.fetch_add(evicted_bytes) + evicted_bytes >= options_.release_memory_every &&
      evicted_since_release_.exchange(0) >= options_.release_memory_every)
    release_free_memory();
}

Result<std::optional<CacheEntry>> MemoryStore::get(std::string_view key) {
  std::shared_ptr<const CacheEntry> entry = find(key);
  if (!entry) return std::optional<CacheEntry>();
  return std::optional<CacheEntry>(*entry);
}

Status MemoryStore::put(const CacheEntry& entry) {
  insert(std::make_shared<const CacheEntry>(entry));
  return Ok{};
}

Status MemoryStore::remove(std::string_view key) {
  Shard& shard = shard_for(key);
  std::lock_guard lock(shard.mutex);
  if (auto it = shard.index.find(key); it != shard.index.end()) shard.erase(it->second);
  return Ok{};
}

Result<bool> MemoryStore::contains(std::string_view key) {
  return peek(key) != nullptr;
}

StoreStats MemoryStore::stats() const {
  StoreStats out;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    out.hits += shard->hits;
    out.misses += shard->misses;
    out.puts += shard->puts;
    out.evictions += shard->evictions;
    out.bytes += shard->bytes;
    out.entries += shard->index.size();
  }
  return out;
}

Result<std::vector<StoredKey>> MemoryStore::list() {
  std::vector<StoredKey> out;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    for (const Shard::Node& node : shard->lru) out.push_back({node.entry->key, node.bytes, node.last_access_unix});
  }
  return out;
}

}  // namespace kjit
