// Sharded, byte-bounded LRU (see memory_store.h).
#include "cache/memory_store.h"

#include <malloc.h>

#include <chrono>
#include <functional>
#include <list>
#include <optional>
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
    uint64_t used = 0;  // the shard's clock at the last use: orders the owners' lists against each other
  };
  using Lru = std::list<Node>;  // front: most recently used
  // Each owner's entries are a list of their own, so that an owner's own
  // least recently used entry is found at once; without shares there is one.
  struct Owner {
    Lru lru;
    uint64_t bytes = 0;
    uint64_t evictions = 0;
  };
  struct Slot {
    Owner* owner;  // a node of `owners`: stable while the map grows
    Lru::iterator at;
  };

  // Counters live under the shard's own lock, so the hit path touches no
  // memory shared with other shards.
  mutable std::mutex mutex;
  std::unordered_map<std::string, Owner, StringHash, std::equal_to<>> owners;
  std::unordered_map<std::string, Slot, StringHash, std::equal_to<>> index;
  uint64_t bytes = 0;
  uint64_t clock = 0;
  uint64_t hits = 0, misses = 0, puts = 0, evictions = 0;

  void erase(Slot slot) {
    bytes -= slot.at->bytes;
    slot.owner->bytes -= slot.at->bytes;
    index.erase(slot.at->entry->key);
    slot.owner->lru.erase(slot.at);
  }
  // Evicts owner's least recently used entry; its bytes.
  uint64_t evict(Owner& owner) {
    const auto last = std::prev(owner.lru.end());
    const uint64_t freed = last->bytes;
    erase(Slot{&owner, last});
    ++evictions;
    ++owner.evictions;
    return freed;
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
  Shard::Lru& lru = it->second.owner->lru;
  lru.splice(lru.begin(), lru, it->second.at);
  it->second.at->last_access_unix = unix_seconds_now();
  it->second.at->used = ++shard.clock;
  return it->second.at->entry;
}

std::shared_ptr<const CacheEntry> MemoryStore::peek(std::string_view key) const {
  Shard& shard = shard_for(key);
  std::lock_guard lock(shard.mutex);
  auto it = shard.index.find(key);
  return it == shard.index.end() ? nullptr : it->second.at->entry;
}

void MemoryStore::insert(std::shared_ptr<const CacheEntry> entry, bool keep_stored) {
  const uint64_t bytes = footprint(*entry);
  const std::shared_ptr<const StoreShares> shares = shares_.load();
  const std::string owner_name = options_.owner_of ? options_.owner_of(entry->key) : std::string();
  // Each shard holds its part of every share, as it does of the bound.
  auto shard_share = [&](std::string_view owner) -> std::optional<uint64_t> {
    const std::optional<uint64_t> share = shares ? shares->share_of(owner) : std::nullopt;
    if (!share) return std::nullopt;
    return *share / shards_.size();
  };
  const std::optional<uint64_t> own_share = shard_share(owner_name);
  Shard& shard = shard_for(entry->key);
  std::shared_ptr<const CacheEntry> replaced;  // released after the lock
  uint64_t evicted_bytes = 0;
  {
    std::lock_guard lock(shard.mutex);
    if (keep_stored && shard.index.contains(entry->key)) return;
    ++shard.puts;
    if (auto it = shard.index.find(entry->key); it != shard.index.end()) {
      replaced = it->second.at->entry;
      shard.erase(it->second);
    }
    // Larger than the shard's whole budget (or the owner's part of it):
    // keeping it would evict everything.
    if (bytes > shard_max_bytes_ || (own_share && bytes > *own_share)) return;
    Shard::Owner& owner = shard.owners[owner_name];
    owner.lru.push_front(Shard::Node{entry, bytes, unix_seconds_now(), ++shard.clock});
    shard.index.emplace(entry->key, Shard::Slot{&owner, owner.lru.begin()});
    owner.bytes += bytes;
    shard.bytes += bytes;
    // An owner past its share makes room from its own entries.
    while (own_share && owner.bytes > *own_share) evicted_bytes += shard.evict(owner);
    while (shard.bytes > shard_max_bytes_) {
      // The least recently used entry of an owner without a share or past
      // it; else the putting owner's own; else (shares past the bound) the
      // least recently used of all.
      Shard::Owner* victim = nullptr;
      Shard::Owner* oldest = nullptr;
      for (auto& [name, candidate] : shard.owners) {
        if (candidate.lru.empty()) continue;
        const uint64_t used = candidate.lru.back().used;
        if (!oldest || used < oldest->lru.back().used) oldest = &candidate;
        const std::optional<uint64_t> share = shard_share(name);
        if (share && candidate.bytes <= *share) continue;
        if (!victim || used < victim->lru.back().used) victim = &candidate;
      }
      if (!victim) victim = owner.lru.empty() ? oldest : &owner;
      evicted_bytes += shard.evict(*victim);
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
    for (const auto& [name, owner] : shard->owners)
      for (const Shard::Node& node : owner.lru) out.push_back({node.entry->key, node.bytes, node.last_access_unix});
  }
  return out;
}

void MemoryStore::set_shares(std::shared_ptr<const StoreShares> shares) { shares_.store(std::move(shares)); }

std::map<std::string, OwnerUsage> MemoryStore::owner_usage() const {
  std::map<std::string, OwnerUsage> out;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    for (const auto& [name, owner] : shard->owners) {
      OwnerUsage& usage = out[name];
      usage.bytes += owner.bytes;
      usage.entries += owner.lru.size();
      usage.evictions += owner.evictions;
    }
  }
  return out;
}

}  // namespace kjit
