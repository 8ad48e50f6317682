#include "server/rpc/caller_stats.h"

#include "server/edge/stats_translation.h"
#include "server/rpc/caller_cache.h"

namespace kjit {
namespace {

void to_wire(const NamespaceStats& from, v1::NamespaceStats& to) {
  to.set_namespace_(from.ns);
  to.set_lookups(from.lookups());
  to.set_misses(from.misses);
  to.set_compiles(from.compiles);
  to.set_joined(from.joined);
  to.set_compile_ms_saved(from.compile_ms_saved);
  to.set_memory_hits(from.hits[index_of(CacheTier::memory)]);
  to.set_disk_hits(from.hits[index_of(CacheTier::disk)]);
  to.set_redis_hits(from.hits[index_of(CacheTier::redis)]);
  to.set_reapi_hits(from.hits[index_of(CacheTier::reapi)]);
  to.set_memory_bytes(from.memory_bytes);
  to.set_memory_entries(from.memory_entries);
  to.set_memory_evictions(from.memory_evictions);
  to.set_disk_bytes(from.disk_bytes);
  to.set_disk_entries(from.disk_entries);
  to.set_disk_evictions(from.disk_evictions);
  to.set_max_bytes(from.max_bytes.value_or(0));
}

}  // namespace

v1::StatsResponse stats_for(const DaemonCache& cache, const BlobStats& blobs, const Caller& caller,
                            const WorkerCounters* workers) {
  if (caller.is_operator()) {
    v1::StatsResponse response = to_stats_response(cache.stats(), cache.coalescer_stats(), blobs);
    for (const NamespaceStats& ns : cache.namespace_stats()) to_wire(ns, *response.add_namespaces());
    if (workers) {
      v1::PchStats& pch = *response.mutable_pch();
      pch.set_hits(workers->pch_hits);
      pch.set_creations(workers->pch_creations);
      pch.set_fallbacks(workers->pch_fallbacks);
      pch.set_evictions(workers->pch_evictions);
      pch.set_firsts(workers->pch_firsts);
      pch.set_bytes(workers->pch_bytes);
    }
    return response;
  }
  const NamespaceStats own = namespace_stats_of(cache, caller);
  // Which tiers there are is the configuration's, no one's activity; what
  // they answered and hold is the caller's namespace's alone. Counters kept
  // only for the whole daemon (puts, errors, blobs, fleet waits) stay 0.
  TieredCacheStats scoped;
  for (const TierStats& tier : cache.stats().tiers) {
    TierStats& mine = scoped.tiers.emplace_back(TierStats{tier.tier, {}, own.hits[index_of(tier.tier)], 0});
    mine.store.hits = mine.answered;
    if (tier.tier == CacheTier::memory) {
      mine.store.bytes = own.memory_bytes;
      mine.store.entries = own.memory_entries;
      mine.store.evictions = own.memory_evictions;
    } else if (tier.tier == CacheTier::disk) {
      mine.store.bytes = own.disk_bytes;
      mine.store.entries = own.disk_entries;
      mine.store.evictions = own.disk_evictions;
    }
  }
  scoped.lookups = own.lookups();
  scoped.misses = own.misses;
  scoped.compile_ms_saved = own.compile_ms_saved;
  CoalescerStats coalescer;
  coalescer.compiles = own.compiles;
  coalescer.joined = own.joined;
  v1::StatsResponse response = to_stats_response(scoped, coalescer, BlobStats{});
  to_wire(own, *response.add_namespaces());
  response.set_namespace_only(true);
  return response;
}

}  // namespace kjit
