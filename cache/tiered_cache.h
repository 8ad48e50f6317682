// The cache the daemon talks to: memory → disk → Redis → REAPI. A get asks the tiers
// in order and copies a lower tier's hit into the tiers above it (with
// Options::fill_behind, after answering: see there); a put writes every
// tier. A tier that fails is skipped and counted, never fatal: the worst
// outcome of a broken tier is a compile.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "cache/cache_source.h"
#include "cache/memory_store.h"
#include "cache/store.h"
#include "cache/write_behind_queue.h"

namespace kjit {


struct CacheHit {
  std::shared_ptr<const CacheEntry> entry;  // shared with the memory tier: never copied on a memory hit
  CacheTier tier;                           // which tier answered
};

struct TierStats {
  CacheTier tier;
  StoreStats store;       // the tier's own counters
  uint64_t answered = 0;  // gets this tier answered for the tiered cache
  uint64_t failures = 0;  // operations that failed here and were skipped
  // Copies of a lower tier's hit into this tier that were dropped, not
  // made: the queue of fills behind answers was full. Not on the wire.
  uint64_t fills_dropped = 0;

  // Operations of this tier that failed. The tier counts its own failures
  // and the cache above it counts the same ones again as `failures`, so they
  // are never added; the larger also covers a tier that keeps no count.
  uint64_t failed_operations() const { return std::max(store.errors, failures); }
};

// A tier's counters as the wire reports them, by name (kjit.v1.TierStats):
// the store's, with `errors` being failed_operations(), and `answered`.
// Values, not references: `errors` is computed.
template <typename Visit>
void for_each_counter(const TierStats& tier, Visit&& visit) {
  StoreStats reported = tier.store;
  reported.errors = tier.failed_operations();
  for_each_counter(std::as_const(reported), visit);
  visit("answered", std::as_const(tier.answered));
}

struct TieredCacheStats {
  std::vector<TierStats> tiers;  // configured tiers, top first
  uint64_t lookups = 0;
  uint64_t misses = 0;          // no tier had the key
  double compile_ms_saved = 0;  // sum of compile_ms over every hit
};

// The counters of the whole cache, by name (kjit.v1.StatsResponse), the
// tiers apart: visit(name, counter), counter a reference.
template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, TieredCacheStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("lookups", stats.lookups);
  visit("misses", stats.misses);
  visit("compile_ms_saved", stats.compile_ms_saved);
}

class TieredCache {
 public:
  // Any tier may be null (turned off). Stores are shared so the daemon can
  // keep a DiskStore for verify / gc.
  struct Tiers {
    std::shared_ptr<MemoryStore> memory;
    std::shared_ptr<Store> disk;
    std::shared_ptr<Store> redis;
    std::shared_ptr<Store> reapi = nullptr;  // a REAPI server's ActionCache and CAS (reapi_store.h)
  };

  struct Options {
    // Where a hit of a tier below disk (Redis, REAPI) is copied into the
    // tiers between memory and it (disk; Redis too for a REAPI hit). Off:
    // before get() returns. On: behind the answer, through a
    // WriteBehindQueue of at most max_fill_bytes (MemoryStore::footprint of
    // the entries), whose fills past the bound are dropped and counted
    // (TierStats::fills_dropped), so a hit never waits for a disk write.
    // Memory is filled before get() returns either way: it costs no I/O, and
    // the next request for the key is a memory hit at once.
    bool fill_behind = false;
    uint64_t max_fill_bytes = 64ull << 20;
  };

  explicit TieredCache(Tiers tiers);
  TieredCache(Tiers tiers, Options options);
  // Makes the fills still queued (bounded by the tiers' own timeouts).
  ~TieredCache();

  // The first tier holding key, after filling memory and, unless the fills
  // go behind the answer (Options::fill_behind), the other tiers above it;
  // nullopt when none does (or every tier that might failed).
  std::optional<CacheHit> get(std::string_view key);
  // The memory tier alone, counted as get() counts a memory hit; a miss is
  // not counted, so that the get() which follows it counts the lookup once.
  // Never blocks on I/O: the daemon answers memory hits on gRPC's threads.
  std::optional<CacheHit> get_from_memory(std::string_view key);

  // Writes entry to every tier; returns it as the memory tier now shares it.
  std::shared_ptr<const CacheEntry> put(CacheEntry entry);

  // The memory tier only, counting nothing: for a single-flight leader to
  // see a result published between its miss and its turn.
  std::shared_ptr<const CacheEntry> peek_memory(std::string_view key) const;

  // Removes key from every tier.
  void remove(std::string_view key);

  TieredCacheStats stats() const;

  // Blocks until every fill queued behind an answer before the call has been
  // made (or has failed, counted); returns at once without fill_behind.
  void flush_fills();

  // The store behind a tier, or null when that tier is off.
  Store* tier(CacheTier tier) const;

  // The stores themselves, for a second TieredCache over the same tiers that
  // keeps its own lookup counters (client blobs, counted apart from compiles).
  Tiers shared_tiers() const;

 private:
  // Own cache lines: every hit bumps these from whatever thread serves it.
  struct alignas(64) Counters {
    std::atomic<uint64_t> answered{0};
    std::atomic<uint64_t> failures{0};
    std::atomic<uint64_t> fills_dropped{0};
  };

  void put_below_memory(const CacheEntry& entry, size_t up_to_tier);
  // Copies a hit of tier `from` into the tiers between memory and it, at
  // once or queued (Options::fill_behind).
  void fill_above(std::shared_ptr<const CacheEntry> entry, size_t from);
  // The copy itself, which never replaces what a tier holds.
  void fill_now(const CacheEntry& entry, size_t from);
  void count_hit(const CacheHit& hit);
  void note_failure(CacheTier tier, std::string_view operation, const Error& error);

  std::shared_ptr<MemoryStore> memory_;
  std::array<std::shared_ptr<Store>, k_cache_tier_count> stores_;  // indexed by CacheTier
  std::array<Counters, k_cache_tier_count> counters_;
  alignas(64) std::atomic<uint64_t> misses_{0};
  alignas(64) std::atomic<int64_t> compile_us_saved_{0};
  // With fill_behind, when some tier below disk could fill one above it.
  // Emptied first by the destructor: its fills use everything above.
  std::unique_ptr<WriteBehindQueue> fills_;
};

}  // namespace kjit
