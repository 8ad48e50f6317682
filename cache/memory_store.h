// The memory tier: an LRU bounded in bytes, split into shards by key hash so
// that concurrent hits on different keys never wait on one lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/store.h"
#include "cache/store_shares.h"

namespace kjit {

class MemoryStore final : public Store {
 public:
  struct Options {
    uint64_t max_bytes = 256ull << 20;
    // Each shard is its own LRU with max_bytes / shards, so eviction order is
    // exact within a shard and approximate across them; one shard gives an
    // exact global LRU (tests) at the price of one lock.
    size_t shards = 16;
    // After this many bytes of evicted entries, hand the allocator's free
    // pages back to the system (malloc_trim); 0 never does. glibc otherwise
    // keeps much of what evictions free resident, and a daemon's RSS stood
    // up to 30 % above the budget.
    uint64_t release_memory_every = 0;
    // Whose each entry is, for shares of the bound (set_shares).
    OwnerOf owner_of{};
  };

  explicit MemoryStore(Options options);
  ~MemoryStore() override;

  std::string_view name() const override { return "memory"; }
  Result<std::optional<CacheEntry>> get(std::string_view key) override;
  Status put(const CacheEntry& entry) override;
  Status remove(std::string_view key) override;
  // peek() != nullptr.
  Result<bool> contains(std::string_view key) override;
  StoreStats stats() const override;
  Result<std::vector<StoredKey>> list() override;

  // The hit path without copying the payload: the stored entry itself, shared
  // and immutable, or nullptr on a miss. Counts like get().
  std::shared_ptr<const CacheEntry> find(std::string_view key);

  // find() that counts only a hit: for a fast path whose miss is counted by
  // the full lookup that follows it.
  std::shared_ptr<const CacheEntry> find_if_present(std::string_view key);
  // find() without counting or refreshing recency.
  std::shared_ptr<const CacheEntry> peek(std::string_view key) const;

  // put() without copying: the store keeps a reference to entry.
  // keep_stored: an entry already under its key stays, and entry is
  // dropped (a copy from a lower tier, which may be older than what a put
  // has just stored here).
  void insert(std::shared_ptr<const CacheEntry> entry, bool keep_stored = false);

  // Bytes charged for an entry: payload, metadata strings and a fixed
  // per-entry overhead, so many tiny entries still respect the bound.
  static uint64_t footprint(const CacheEntry& entry);

  // Divides the bound among the entries' owners (Options::owner_of) from
  // the next put on, each shard holding its part of every share as it does
  // of the bound; null: no shares.
  void set_shares(std::shared_ptr<const StoreShares> shares);
  // What each owner holds; an owner that held nothing is absent.
  std::map<std::string, OwnerUsage> owner_usage() const;

 private:
  struct Shard;
  Shard& shard_for(std::string_view key) const;
  std::shared_ptr<const CacheEntry> find_counting(std::string_view key, bool count_miss);

  Options options_;
  uint64_t shard_max_bytes_;
  std::atomic<uint64_t> evicted_since_release_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<std::shared_ptr<const StoreShares>> shares_;
};

}  // namespace kjit
