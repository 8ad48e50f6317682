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
  // Claims on groups (ClaimBlobGroup), counted where they are asked and held.
  uint64_t claims = 0;            // claims granted: the caller compiles
  uint64_t claim_hits = 0;        // claim calls answered with the group, at once or after waiting
  uint64_t claim_waits = 0;       // claim calls that waited while another caller held the claim
  uint64_t claim_wait_ms = 0;     // the time those waits took, together
  uint64_t claim_timeouts = 0;    // claim calls that reached their wait bound: the caller compiles without one
  uint64_t claims_abandoned = 0;  // claims that ended without their group: failed, released, holder gone
  uint64_t claims_refused = 0;    // claim calls over a waiter or claim bound (RESOURCE_EXHAUSTED)
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
  visit("claims", stats.claims);
  visit("claim_hits", stats.claim_hits);
  visit("claim_waits", stats.claim_waits);
  visit("claim_wait_ms", stats.claim_wait_ms);
  visit("claim_timeouts", stats.claim_timeouts);
  visit("claims_abandoned", stats.claims_abandoned);
  visit("claims_refused", stats.claims_refused);
}

}  // namespace kjit
