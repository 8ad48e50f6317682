// One cache namespace's compile lookups, counted by its NamespacedCache view
// where they happen, so that Stats can answer a tenant with its own figures
// alone and the operator with every namespace's. The tiers' own counters
// are the whole daemon's; these never are.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_source.h"

namespace kjit {

struct NamespaceCounters {
  std::array<std::atomic<uint64_t>, k_cache_tier_count> hits{};  // by tier (index_of)
  std::atomic<uint64_t> misses{0};    // no tier had the key
  std::atomic<uint64_t> compiles{0};  // misses this daemon compiled
  std::atomic<uint64_t> joined{0};    // misses that waited for another request's compile
  std::atomic<int64_t> compile_us_saved{0};

  // What answered one lookup, and the compile time a hit saved.
  void count(CacheSource source, double compile_ms) {
    if (source == CacheSource::compiled || source == CacheSource::joined) {
      ++misses;
      ++(source == CacheSource::compiled ? compiles : joined);
      return;
    }
    ++hits[index_of(source)];
    compile_us_saved += static_cast<int64_t>(compile_ms * 1000);
  }
};

// A namespace's figures at one moment: its lookups and what it holds in
// each bounded tier against its share.
struct NamespaceStats {
  std::string ns;                    // "": the default namespace (the operator's)
  std::vector<std::string> tenants;  // tenants served in it, when the daemon has tenants
  std::array<uint64_t, k_cache_tier_count> hits{};
  uint64_t misses = 0, compiles = 0, joined = 0;
  double compile_ms_saved = 0;
  uint64_t memory_bytes = 0, memory_entries = 0, memory_evictions = 0;
  uint64_t disk_bytes = 0, disk_entries = 0, disk_evictions = 0;
  std::optional<uint64_t> max_bytes;  // its share of each bounded tier; none: the tier's bound alone

  uint64_t lookups() const {
    uint64_t out = misses;
    for (uint64_t h : hits) out += h;
    return out;
  }
};

}  // namespace kjit
