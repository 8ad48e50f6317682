// What the daemon counts of client blobs (server/compile/blob_store.h, which
// counts them). The struct sits here, beside the cache's other counters, so
// that the wire translation, which may not see the compile room, reads them
// all by name (server/edge/stats_translation.h).
#pragma once

#include <cstdint>
#include <type_traits>

namespace kjit {

struct BlobStats {
  uint64_t puts = 0, put_bytes = 0, gets = 0, hits = 0, misses = 0;
  uint64_t groups_put = 0, group_gets = 0, group_hits = 0;
  // Puts that found other bytes already stored under the same identity in
  // the caller's blob namespace; the first writer's stay.
  uint64_t put_conflicts = 0;
};

// The counters by name, as kjit.v1.BlobStats names them: visit(name,
// counter), counter a uint64_t& (const for a const stats).
template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, BlobStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("puts", stats.puts);
  visit("put_bytes", stats.put_bytes);
  visit("gets", stats.gets);
  visit("hits", stats.hits);
  visit("misses", stats.misses);
  visit("groups_put", stats.groups_put);
  visit("group_gets", stats.group_gets);
  visit("group_hits", stats.group_hits);
  visit("put_conflicts", stats.put_conflicts);
}

}  // namespace kjit
