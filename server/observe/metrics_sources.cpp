#include "server/observe/metrics_sources.h"

#include <deque>
#include <initializer_list>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "cache/compile_coalescer.h"
#include "cache/reapi_store.h"
#include "cache/tiered_cache.h"
#include "server/compile/blob_store.h"
#include "server/compile/compile_admission.h"
#include "server/compile/fleet_builds.h"
#include "server/compile/namespace_counters.h"
#include "server/workers/compile_workers.h"

namespace kjit {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Kills by these causes are exported even at 0, so that rate() over them
// has a series from the first scrape.
constexpr std::initializer_list<const char*> k_kill_causes = {"timeout", "bound", "cancelled", "shutdown"};

class Families {
 public:
  MetricFamily& add(std::string name, std::string help, MetricType type) {
    out_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return out_.back();
  }
  // One family of one unlabelled sample.
  void single(std::string name, std::string help, MetricType type, double value) {
    sample(add(std::move(name), std::move(help), type), {}, value);
  }
  static void sample(MetricFamily& family, std::vector<ClientMetric::Label> labels, double value) {
    ClientMetric metric;
    metric.label = std::move(labels);
    if (family.type == MetricType::Counter)
      metric.counter.value = value;
    else
      metric.gauge.value = value;
    family.metric.push_back(std::move(metric));
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end())};
  }

 private:
  std::deque<MetricFamily> out_;  // references to families stay valid as more are added
};

void add_cache(Families& out, const TieredCacheStats& stats) {
  struct PerTier {
    const char* name;
    const char* help;
    MetricType type;
    double (*value)(const TierStats&);
  };
  const PerTier per_tier[] = {
      {"kjit_cache_hits_total", "Compile lookups answered by this tier.", MetricType::Counter,
       [](const TierStats& t) { return double(t.answered); }},
      {"kjit_cache_misses_total", "Gets this tier did not hold.", MetricType::Counter,
       [](const TierStats& t) { return double(t.store.misses); }},
      {"kjit_cache_puts_total", "Entries written to this tier.", MetricType::Counter,
       [](const TierStats& t) { return double(t.store.puts); }},
      {"kjit_cache_stored_bytes", "Bytes this tier holds now (approximate for shared tiers).", MetricType::Gauge,
       [](const TierStats& t) { return double(t.store.bytes); }},
      {"kjit_cache_entries", "Entries this tier holds now (approximate for shared tiers).", MetricType::Gauge,
       [](const TierStats& t) { return double(t.store.entries); }},
      {"kjit_cache_evictions_total", "Entries this tier evicted.", MetricType::Counter,
       [](const TierStats& t) { return double(t.store.evictions); }},
      {"kjit_cache_corrupt_entries_total", "Entries that failed verification and were removed.", MetricType::Counter,
       [](const TierStats& t) { return double(t.store.corruptions); }},
      // As the Cache.Stats RPC counts them.
      {"kjit_cache_errors_total", "Operations that failed in this tier (I/O, full disk, network).",
       MetricType::Counter, [](const TierStats& t) { return double(t.failed_operations()); }},
      {"kjit_cache_fills_dropped_total",
       "Copies of a lower tier's hit into this tier not made: the queue of fills behind answers was full.",
       MetricType::Counter, [](const TierStats& t) { return double(t.fills_dropped); }},
  };
  std::vector<MetricFamily*> families;
  for (const PerTier& p : per_tier) families.push_back(&out.add(p.name, p.help, p.type));
  for (const TierStats& tier : stats.tiers) {
    const std::string name(to_string(tier.tier));
    for (size_t i = 0; i < std::size(per_tier); ++i)
      Families::sample(*families[i], {{"tier", name}}, per_tier[i].value(tier));
  }
  out.single("kjit_cache_lookups_total", "Compile lookups in the tiered cache.", MetricType::Counter,
             double(stats.lookups));
}

void add_workers(Families& out, const WorkerCounters& workers) {
  out.single("kjit_worker_starts_total", "Compile worker processes started.", MetricType::Counter,
             double(workers.started));
  out.single("kjit_worker_crashes_total", "Compile workers that died by a signal not ours or exited unasked.",
             MetricType::Counter, double(workers.crashed));
  MetricFamily& kills = out.add("kjit_worker_kills_total", "Compile workers killed by kjitd, by cause.",
                                MetricType::Counter);
  std::map<std::string, uint64_t> by_cause = workers.kills;
  for (const char* cause : k_kill_causes) by_cause.try_emplace(cause, 0);
  for (const auto& [cause, n] : by_cause) Families::sample(kills, {{"cause", cause}}, double(n));
  MetricFamily& job_bounds =
      out.add("kjit_compile_job_bounds_total",
              "Compiles stopped by a bound of their job's own process while the worker lived on (a Triton job's "
              "child), by bound: cpu (limits.compile_cpu_seconds), memory (limits.compile_memory_bytes), time.",
              MetricType::Counter);
  std::map<std::string, uint64_t> by_bound = workers.job_bounds;
  for (const char* bound : {"cpu", "memory", "time"}) by_bound.try_emplace(bound, 0);
  for (const auto& [bound, n] : by_bound) Families::sample(job_bounds, {{"bound", bound}}, double(n));
  out.single("kjit_workers_live", "Compile worker processes alive now.", MetricType::Gauge, double(workers.live));
  MetricFamily& by_class = out.add("kjit_workers_live_by_class",
                                   "Compile worker processes alive now, by class: general, tileir (may run "
                                   "tileiras), triton (may run a Triton build and its ptxas), and each for "
                                   "background fleet builds.",
                                   MetricType::Gauge);
  for (size_t index = 0; index < k_worker_class_count; ++index) {
    const std::string name = WorkerClass::of_index(index).name();
    auto live = workers.live_by_class.find(name);
    Families::sample(by_class, {{"class", name}}, live == workers.live_by_class.end() ? 0.0 : double(live->second));
  }
  MetricFamily& pch = out.add("kjit_worker_pch_total",
                              "Workers' precompiled headers: compiles that used one (hit), PCH files written "
                              "(create), compiles that did without one they wanted (fallback), files evicted (evict), "
                              "compiles of a header set new to their worker, which write its PCH (first).",
                              MetricType::Counter);
  Families::sample(pch, {{"event", "hit"}}, double(workers.pch_hits));
  Families::sample(pch, {{"event", "create"}}, double(workers.pch_creations));
  Families::sample(pch, {{"event", "fallback"}}, double(workers.pch_fallbacks));
  Families::sample(pch, {{"event", "evict"}}, double(workers.pch_evictions));
  Families::sample(pch, {{"event", "first"}}, double(workers.pch_firsts));
  out.single("kjit_worker_pch_bytes", "The precompiled header files the live compile workers keep now, together.",
             MetricType::Gauge, double(workers.pch_bytes));
}

void add_admission(Families& out, const AdmissionSnapshot& queue) {
  out.single("kjit_compile_queue_pending", "Compiles admitted and not finished.", MetricType::Gauge,
             double(queue.pending));
  out.single("kjit_compile_queue_waiting", "Compiles waiting for a compile slot.", MetricType::Gauge,
             double(queue.waiting));
  out.single("kjit_compile_queue_running", "Compiles holding a compile slot.", MetricType::Gauge,
             double(queue.running));
  MetricFamily& by_tenant = out.add("kjit_compile_queue_pending_by_tenant", "Pending compiles of each tenant.",
                                    MetricType::Gauge);
  for (const auto& [tenant, n] : queue.pending_by_tenant)
    Families::sample(by_tenant, {{"tenant", tenant}}, double(n));
  out.single("kjit_compile_refused_total", "Compiles refused over a queue bound.", MetricType::Counter,
             double(queue.refused));
}

void add_fleet(Families& out, const FleetStats& fleet) {
  MetricFamily& builds = out.add("kjit_fleet_builds_total",
                                 "Background builds for the fleet's other targets, by result (dropped: the queue was full).",
                                 MetricType::Counter);
  Families::sample(builds, {{"result", "compiled"}}, double(fleet.compiled));
  Families::sample(builds, {{"result", "cached"}}, double(fleet.cached));
  Families::sample(builds, {{"result", "failed"}}, double(fleet.failed));
  Families::sample(builds, {{"result", "dropped"}}, double(fleet.dropped));
  out.single("kjit_fleet_queue_length", "Background fleet builds waiting.", MetricType::Gauge, double(fleet.queued));
  out.single("kjit_fleet_builds_running", "Background fleet builds running (at most 1).", MetricType::Gauge,
             double(fleet.running));
  out.single("kjit_fleet_yields_total", "Background fleet builds that waited for clients' compiles before starting.",
             MetricType::Counter, double(fleet.yielded));
}

// Each cache namespace (a tenant's; "(default)" the operator's): lookups,
// what it holds per bounded tier, and its share.
void add_namespaces(Families& out, const std::vector<NamespaceStats>& namespaces) {
  MetricFamily& lookups =
      out.add("kjit_namespace_lookups_total", "Compile lookups of each cache namespace.", MetricType::Counter);
  MetricFamily& hits = out.add("kjit_namespace_hits_total", "Compile lookups of each namespace a tier answered.",
                               MetricType::Counter);
  MetricFamily& compiles =
      out.add("kjit_namespace_compiles_total", "Compiles this daemon ran for each namespace.", MetricType::Counter);
  MetricFamily& bytes = out.add("kjit_namespace_stored_bytes",
                                "Bytes each namespace holds in a bounded tier (compile entries and blobs).",
                                MetricType::Gauge);
  MetricFamily& evictions = out.add("kjit_namespace_evictions_total",
                                    "Entries of each namespace a bounded tier evicted.", MetricType::Counter);
  MetricFamily& quota = out.add("kjit_namespace_quota_bytes",
                                "Each namespace's share of each bounded tier ([[tenants]] max_bytes); absent: none.",
                                MetricType::Gauge);
  for (const NamespaceStats& ns : namespaces) {
    const std::string name = ns.ns.empty() ? "(default)" : ns.ns;
    Families::sample(lookups, {{"namespace", name}}, double(ns.lookups()));
    for (CacheTier tier : {CacheTier::memory, CacheTier::disk, CacheTier::redis, CacheTier::reapi})
      Families::sample(hits, {{"namespace", name}, {"tier", std::string(to_string(tier))}},
                       double(ns.hits[index_of(tier)]));
    Families::sample(compiles, {{"namespace", name}}, double(ns.compiles));
    Families::sample(bytes, {{"namespace", name}, {"tier", "memory"}}, double(ns.memory_bytes));
    Families::sample(bytes, {{"namespace", name}, {"tier", "disk"}}, double(ns.disk_bytes));
    Families::sample(evictions, {{"namespace", name}, {"tier", "memory"}}, double(ns.memory_evictions));
    Families::sample(evictions, {{"namespace", name}, {"tier", "disk"}}, double(ns.disk_evictions));
    if (ns.max_bytes) Families::sample(quota, {{"namespace", name}}, double(*ns.max_bytes));
  }
}

}  // namespace

void MetricsSourcesCollector::set(MetricsSources sources) {
  std::lock_guard lock(mutex_);
  sources_ = std::move(sources);
}

std::vector<MetricFamily> MetricsSourcesCollector::Collect() const {
  MetricsSources sources;
  {
    std::lock_guard lock(mutex_);
    sources = sources_;
  }
  // The sources are called without the lock: they take their owners' locks.
  Families out;
  if (sources.cache) add_cache(out, sources.cache());
  if (sources.coalescer) {
    const CoalescerStats stats = sources.coalescer();
    out.single("kjit_compiles_total", "Compiles this daemon ran.", MetricType::Counter, double(stats.compiles));
    out.single("kjit_compiles_joined_total", "Requests that joined another request's compile.",
               MetricType::Counter, double(stats.joined));
  }
  if (sources.blobs) {
    const BlobStats stats = sources.blobs();
    out.single("kjit_blob_puts_total", "Client blobs stored.", MetricType::Counter, double(stats.puts));
    out.single("kjit_blob_gets_total", "Client blob gets.", MetricType::Counter, double(stats.gets));
    out.single("kjit_blob_hits_total", "Client blob gets that found the blob.", MetricType::Counter,
               double(stats.hits));
    out.single("kjit_blob_claims_total", "Claims on blob groups granted: a client compiles.", MetricType::Counter,
               double(stats.claims));
    out.single("kjit_blob_claim_waits_total", "Claim calls that waited for another client's compile.",
               MetricType::Counter, double(stats.claim_waits));
    out.single("kjit_blob_claim_wait_seconds_total", "Time claim calls waited for another client's compile.",
               MetricType::Counter, double(stats.claim_wait_ms) / 1000);
    out.single("kjit_blob_claim_timeouts_total", "Claim calls that waited their whole bound.", MetricType::Counter,
               double(stats.claim_timeouts));
    out.single("kjit_blob_claims_abandoned_total", "Claims that ended without their group being put.",
               MetricType::Counter, double(stats.claims_abandoned));
    out.single("kjit_blob_claims_refused_total", "Claim calls over a bound on waiters or claims.",
               MetricType::Counter, double(stats.claims_refused));
  }
  if (sources.workers) add_workers(out, sources.workers());
  if (sources.namespaces) add_namespaces(out, sources.namespaces());
  if (sources.admission) add_admission(out, sources.admission());
  if (sources.after_warmup) {
    MetricFamily& after = out.add("kjit_compiles_after_warmup_total",
                                  "Misses that reached a compile after warm-up was sealed, by tenant (refused ones too).",
                                  MetricType::Counter);
    for (const auto& [tenant, n] : sources.after_warmup()) Families::sample(after, {{"tenant", tenant}}, double(n));
  }
  if (sources.fleet) add_fleet(out, sources.fleet());
  if (sources.reapi) {
    const ReapiTransferStats stats = sources.reapi();
    out.single("kjit_reapi_read_bytes_total", "Bytes of entries the REAPI tier read from the server's CAS.",
               MetricType::Counter, double(stats.bytes_read));
    out.single("kjit_reapi_written_bytes_total",
               "Bytes the REAPI tier uploaded to the server's CAS (entries, their Commands and Actions).",
               MetricType::Counter, double(stats.bytes_written));
    out.single("kjit_reapi_write_queue", "Entries waiting to be written to the REAPI server behind answers.",
               MetricType::Gauge, double(stats.queued));
    out.single("kjit_reapi_write_failures_total",
               "Writes to the REAPI server that failed (the entries stayed in the tiers above).", MetricType::Counter,
               double(stats.write_failures));
  }
  if (sources.draining)
    out.single("kjit_draining", "1 while kjitd drains before stopping.", MetricType::Gauge,
               sources.draining() ? 1 : 0);
  return out.take();
}

}  // namespace kjit
