// The Store interface every cache tier implements (memory, disk, Redis):
// get / put / remove with failures as values, counters, and a listing.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cache/cache_entry.h"
#include "kjit/status.h"

namespace kjit {

// Counters since the store was opened, except bytes and entries, which
// describe what the tier holds now (approximate where the tier is shared;
// see each tier's header).
struct StoreStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t puts = 0;
  uint64_t bytes = 0;
  uint64_t entries = 0;
  uint64_t evictions = 0;
  uint64_t corruptions = 0;  // entries that failed verification and were removed
  uint64_t errors = 0;       // operations the tier failed (I/O, network, timeout)
  uint64_t skipped = 0;      // operations not attempted because the tier is known down
};

// Every counter of a StoreStats, named as the wire (kjit.v1.TierStats) names
// it: visit(name, counter), counter a uint64_t& (const for a const stats).
// The wire translation and its coverage test read the counters through this
// alone (server/edge/stats_translation.h).
template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, StoreStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("hits", stats.hits);
  visit("misses", stats.misses);
  visit("puts", stats.puts);
  visit("bytes", stats.bytes);
  visit("entries", stats.entries);
  visit("evictions", stats.evictions);
  visit("corruptions", stats.corruptions);
  visit("errors", stats.errors);
  visit("skipped", stats.skipped);
}

// The counters of a tier whose operations bump them from any thread, without
// a lock of their own.
struct StoreCounters {
  std::atomic<uint64_t> hits{0}, misses{0}, puts{0}, evictions{0}, corruptions{0}, errors{0}, skipped{0};

  // bytes and entries are left at 0: they describe contents, not operations.
  StoreStats snapshot() const {
    StoreStats out;
    out.hits = hits;
    out.misses = misses;
    out.puts = puts;
    out.evictions = evictions;
    out.corruptions = corruptions;
    out.errors = errors;
    out.skipped = skipped;
    return out;
  }
};

// One entry as `kjit cache ls` shows it.
struct StoredKey {
  std::string key;
  uint64_t bytes = 0;
  int64_t last_access_unix = 0;  // seconds since the epoch; 0 when the tier cannot tell
};

class Store {
 public:
  virtual ~Store() = default;

  // A short lowercase name for logs and stats: "memory", "disk", "redis".
  virtual std::string_view name() const = 0;

  // The verified entry stored under key, std::nullopt on a miss (a corrupt
  // entry is removed and reported as a miss), or an Error when the tier
  // itself failed.
  virtual Result<std::optional<CacheEntry>> get(std::string_view key) = 0;

  // Stores entry under entry.key, replacing any previous one; a tier may
  // decline an entry larger than its whole bound, which is not a failure.
  virtual Status put(const CacheEntry& entry) = 0;

  // Removes the entry under key; removing a missing key succeeds.
  virtual Status remove(std::string_view key) = 0;

  // Whether an entry is stored under key, without reading, verifying or
  // counting it: a cheap look for one that may have been published since
  // the last miss.
  virtual Result<bool> contains(std::string_view key) = 0;

  // A snapshot of the counters; never blocks on I/O.
  virtual StoreStats stats() const = 0;

  // Every entry the tier holds now, in no particular order.
  virtual Result<std::vector<StoredKey>> list() = 0;
};

}  // namespace kjit
