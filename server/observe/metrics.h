// kjitd's Prometheus metrics, served over HTTP on GET /metrics. Requests,
// compiles and hits are recorded as they happen; the counters that other
// parts keep themselves (cache tiers, coalescer, blobs, workers, the compile
// queue) are read from MetricsSources at each scrape, so they cost nothing
// between scrapes. prometheus-cpp stays inside metrics*.cpp: this header is
// included by every service.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "server/observe/metrics_tls_front.h"

namespace kjit {

struct TieredCacheStats;   // cache/tiered_cache.h
struct CoalescerStats;     // cache/compile_coalescer.h
struct BlobStats;          // cache/blob_stats.h
struct WorkerCounters;     // server/workers/compile_workers.h
struct AdmissionSnapshot;  // server/compile/compile_admission.h
struct NamespaceStats;     // server/compile/namespace_counters.h
struct FleetStats;         // server/compile/fleet_builds.h
struct ReapiTransferStats; // cache/reapi_store.h

// Read at each scrape, from the scraping thread; any may be empty (that
// part is off, or not there yet) and its metrics are then left out.
struct MetricsSources {
  std::function<TieredCacheStats()> cache;
  std::function<CoalescerStats()> coalescer;
  std::function<BlobStats()> blobs;
  std::function<WorkerCounters()> workers;
  std::function<AdmissionSnapshot()> admission;
  // Each cache namespace's lookups, bytes held and share (its tenants').
  std::function<std::vector<NamespaceStats>()> namespaces;
  std::function<bool()> draining;
  // Compiles after warm-up was sealed, by tenant (server/compile/warmup_seal.h).
  std::function<std::map<std::string, uint64_t>()> after_warmup;
  // The background builds for the fleet's other targets.
  std::function<FleetStats()> fleet;
  // The REAPI tier's bytes moved and write queue; unset without the tier.
  std::function<ReapiTransferStats()> reapi;
};

// Who may scrape, and how: a bearer token, and TLS in front of the port.
struct MetricsAccess {
  // The SHA-256 (hex) of the token a scrape must send as `authorization:
  // Bearer <token>`; empty: none asked. set_token_digest replaces it.
  std::string token_sha256;
  // metrics_tls: the certificate and key each new connection is served
  // (metrics_tls_front.h); empty: plaintext HTTP.
  std::function<std::shared_ptr<const MetricsCertificate>()> tls;
};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Serves GET /metrics on address:port; port 0 picks a free port (port()
  // says which). An error when it cannot listen there. Without the token
  // access names, a scrape is answered 401.
  Status serve(const std::string& address, uint16_t port, MetricsAccess access = {});
  uint16_t port() const;  // 0 before serve()
  // A reload's token digest: every request from now on is checked against it.
  void set_token_digest(const std::string& sha256_hex);

  void set_sources(MetricsSources sources);

  // Thread-safe and cheap enough for a memory hit's path: each series is
  // looked up in a cache of its own after its first use.
  // grpc_code is the numeric gRPC status code; it is exported by name.
  void record_request(std::string_view method, int grpc_code, std::string_view tenant, double seconds);
  void record_compile(double seconds, bool ok);            // a compile that ran in this daemon
  void record_hit(std::string_view tier, double seconds);  // a request answered from a cache tier
  void record_reload(bool ok);                              // a reload of the configuration, put in force or refused

  // The exposition text, as a scrape would read it (for tests and debugging).
  std::string text() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kjit
