// kjitd's Prometheus metrics in the process: a Metrics serving on a free
// port, fed records and fake sources, read back by a real HTTP scrape. Names,
// labels and values are what dashboards and alerts rely on.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/compile_coalescer.h"
#include "cache/tiered_cache.h"
#include "server/compile/blob_store.h"
#include "server/compile/compile_admission.h"
#include "server/compile/namespace_counters.h"
#include "server/workers/compile_workers.h"
#include "server/observe/metrics.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit {
namespace {

using test::http_get;

using Labels = test::MetricLabels;

// The value of the sample with exactly these labels; NaN when there is none.
double sample(const std::string& text, const std::string& name, const Labels& labels = {}) {
  return test::metric_sample(text, name, labels);
}

bool has_family(const std::string& text, const std::string& name) {
  return text.find("# TYPE " + name + " ") != std::string::npos;
}

MetricsSources fake_sources(bool draining) {
  MetricsSources s;
  s.cache = [] {
    TieredCacheStats stats;
    TierStats memory{CacheTier::memory, {}, 7, 0};
    memory.store.misses = 3;
    memory.store.puts = 4;
    memory.store.bytes = 4096;
    memory.store.entries = 4;
    memory.store.evictions = 1;
    TierStats disk{CacheTier::disk, {}, 2, 5};
    disk.store.misses = 1;
    disk.store.corruptions = 2;
    disk.store.errors = 6;
    stats.tiers = {memory, disk};
    stats.lookups = 10;
    stats.misses = 1;
    return stats;
  };
  s.coalescer = [] { return CoalescerStats{3, 2, 0, 0}; };
  s.blobs = [] {
    BlobStats stats;
    stats.puts = 5;
    stats.gets = 9;
    stats.hits = 8;
    return stats;
  };
  s.workers = [] {
    WorkerCounters w;
    w.started = 6;
    w.crashed = 1;
    w.kills = {{"timeout", 2}, {"cancelled", 1}};
    w.live = 2;
    w.live_by_class = {{"general", 1}, {"general background", 1}};
    return w;
  };
  s.admission = [] {
    AdmissionSnapshot a;
    a.pending = 5;
    a.waiting = 3;
    a.running = 2;
    a.refused = 11;
    a.pending_by_tenant = {{"team-a", 4}, {"team-b", 1}};
    return a;
  };
  s.namespaces = [] {
    NamespaceStats team;
    team.ns = "team-a";
    team.hits[index_of(CacheTier::memory)] = 6;
    team.misses = 2;
    team.compiles = 2;
    team.memory_bytes = 3000;
    team.disk_bytes = 5000;
    team.disk_evictions = 9;
    team.max_bytes = 8000;
    return std::vector<NamespaceStats>{NamespaceStats{}, team};
  };
  s.draining = [draining] { return draining; };
  return s;
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status served = metrics_.serve("127.0.0.1", 0);
    ASSERT_TRUE(served) << served.error().message;
    ASSERT_NE(metrics_.port(), 0);
  }

  std::string scrape() {
    auto [status, body] = http_get(metrics_.port(), "/metrics");
    EXPECT_NE(status.find(" 200"), std::string::npos) << status;
    return body;
  }

  Metrics metrics_;
};

TEST_F(MetricsTest, RequestsAreCountedByMethodCodeNameAndTenant) {
  metrics_.record_request("Compile", 0, "team-a", 0.002);
  metrics_.record_request("Compile", 0, "team-a", 0.004);
  metrics_.record_request("Compile", 3, "team-a", 0.001);
  metrics_.record_request("GetBlob", 5, "", 0.0001);
  metrics_.record_request("Compile", 99, "team-b", 0.001);  // not a gRPC code

  const std::string text = scrape();
  EXPECT_EQ(sample(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}, {"tenant", "team-a"}}), 2);
  EXPECT_EQ(sample(text, "kjit_requests_total",
                   {{"method", "Compile"}, {"code", "INVALID_ARGUMENT"}, {"tenant", "team-a"}}),
            1);
  EXPECT_EQ(sample(text, "kjit_requests_total", {{"method", "GetBlob"}, {"code", "NOT_FOUND"}, {"tenant", ""}}), 1);
  EXPECT_EQ(sample(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "UNKNOWN"}, {"tenant", "team-b"}}),
            1);
  EXPECT_EQ(sample(text, "kjit_request_duration_seconds_count", {{"method", "Compile"}}), 4);
  EXPECT_NEAR(sample(text, "kjit_request_duration_seconds_sum", {{"method", "Compile"}}), 0.008, 1e-9);
  // 0.002 and 0.001 twice are at or under 2.5 ms, 0.004 is not.
  EXPECT_EQ(sample(text, "kjit_request_duration_seconds_bucket", {{"method", "Compile"}, {"le", "0.0025"}}), 3);
  EXPECT_EQ(sample(text, "kjit_request_duration_seconds_bucket", {{"method", "Compile"}, {"le", "+Inf"}}), 4);
}

TEST_F(MetricsTest, CompilesAndHitsHaveTheirOwnHistograms) {
  metrics_.record_compile(1.5, true);
  metrics_.record_compile(0.2, false);
  metrics_.record_compile(0.3, false);
  metrics_.record_hit("memory", 0.00002);
  metrics_.record_hit("memory", 0.00003);
  metrics_.record_hit("disk", 0.004);

  const std::string text = scrape();
  EXPECT_EQ(sample(text, "kjit_compile_duration_seconds_count", {{"result", "ok"}}), 1);
  EXPECT_EQ(sample(text, "kjit_compile_duration_seconds_count", {{"result", "error"}}), 2);
  EXPECT_NEAR(sample(text, "kjit_compile_duration_seconds_sum", {{"result", "ok"}}), 1.5, 1e-9);
  EXPECT_EQ(sample(text, "kjit_cache_hit_duration_seconds_count", {{"tier", "memory"}}), 2);
  EXPECT_EQ(sample(text, "kjit_cache_hit_duration_seconds_bucket", {{"tier", "memory"}, {"le", "2.5e-05"}}), 1);
  EXPECT_EQ(sample(text, "kjit_cache_hit_duration_seconds_count", {{"tier", "disk"}}), 1);
  EXPECT_TRUE(std::isnan(sample(text, "kjit_cache_hit_duration_seconds_count", {{"tier", "redis"}})));
}

TEST_F(MetricsTest, SourcesAreReadAtEachScrape) {
  metrics_.set_sources(fake_sources(/*draining=*/true));
  const std::string text = scrape();

  EXPECT_EQ(sample(text, "kjit_cache_hits_total", {{"tier", "memory"}}), 7);
  EXPECT_EQ(sample(text, "kjit_cache_hits_total", {{"tier", "disk"}}), 2);
  EXPECT_EQ(sample(text, "kjit_cache_misses_total", {{"tier", "memory"}}), 3);
  EXPECT_EQ(sample(text, "kjit_cache_lookups_total"), 10);
  EXPECT_EQ(sample(text, "kjit_cache_puts_total", {{"tier", "memory"}}), 4);
  EXPECT_EQ(sample(text, "kjit_cache_stored_bytes", {{"tier", "memory"}}), 4096);
  EXPECT_EQ(sample(text, "kjit_cache_entries", {{"tier", "memory"}}), 4);
  EXPECT_EQ(sample(text, "kjit_cache_evictions_total", {{"tier", "memory"}}), 1);
  EXPECT_EQ(sample(text, "kjit_cache_corrupt_entries_total", {{"tier", "disk"}}), 2);
  // The tier counts 6 failures and the cache above it 5 of the same: 6, not 11.
  EXPECT_EQ(sample(text, "kjit_cache_errors_total", {{"tier", "disk"}}), 6);
  EXPECT_TRUE(std::isnan(sample(text, "kjit_cache_hits_total", {{"tier", "redis"}}))) << "redis is not configured";

  EXPECT_EQ(sample(text, "kjit_compiles_total"), 3);
  EXPECT_EQ(sample(text, "kjit_compiles_joined_total"), 2);
  EXPECT_EQ(sample(text, "kjit_blob_puts_total"), 5);
  EXPECT_EQ(sample(text, "kjit_blob_gets_total"), 9);
  EXPECT_EQ(sample(text, "kjit_blob_hits_total"), 8);

  EXPECT_EQ(sample(text, "kjit_worker_starts_total"), 6);
  EXPECT_EQ(sample(text, "kjit_worker_crashes_total"), 1);
  EXPECT_EQ(sample(text, "kjit_worker_kills_total", {{"cause", "timeout"}}), 2);
  EXPECT_EQ(sample(text, "kjit_worker_kills_total", {{"cause", "cancelled"}}), 1);
  EXPECT_EQ(sample(text, "kjit_worker_kills_total", {{"cause", "bound"}}), 0) << "known causes are there at 0";
  EXPECT_EQ(sample(text, "kjit_worker_kills_total", {{"cause", "shutdown"}}), 0);
  EXPECT_EQ(sample(text, "kjit_workers_live"), 2);
  EXPECT_EQ(sample(text, "kjit_workers_live_by_class", {{"class", "general"}}), 1);
  EXPECT_EQ(sample(text, "kjit_workers_live_by_class", {{"class", "general background"}}), 1);
  EXPECT_EQ(sample(text, "kjit_workers_live_by_class", {{"class", "tileir"}}), 0) << "every class is there, at 0";
  EXPECT_EQ(sample(text, "kjit_workers_live_by_class", {{"class", "tileir background"}}), 0);

  EXPECT_EQ(sample(text, "kjit_compile_queue_pending"), 5);
  EXPECT_EQ(sample(text, "kjit_compile_queue_waiting"), 3);
  EXPECT_EQ(sample(text, "kjit_compile_queue_running"), 2);
  EXPECT_EQ(sample(text, "kjit_compile_queue_pending_by_tenant", {{"tenant", "team-a"}}), 4);
  EXPECT_EQ(sample(text, "kjit_compile_queue_pending_by_tenant", {{"tenant", "team-b"}}), 1);
  EXPECT_EQ(sample(text, "kjit_compile_refused_total"), 11);
  EXPECT_EQ(sample(text, "kjit_draining"), 1);

  EXPECT_EQ(sample(text, "kjit_namespace_lookups_total", {{"namespace", "team-a"}}), 8);
  EXPECT_EQ(sample(text, "kjit_namespace_hits_total", {{"namespace", "team-a"}, {"tier", "memory"}}), 6);
  EXPECT_EQ(sample(text, "kjit_namespace_compiles_total", {{"namespace", "team-a"}}), 2);
  EXPECT_EQ(sample(text, "kjit_namespace_stored_bytes", {{"namespace", "team-a"}, {"tier", "memory"}}), 3000);
  EXPECT_EQ(sample(text, "kjit_namespace_stored_bytes", {{"namespace", "team-a"}, {"tier", "disk"}}), 5000);
  EXPECT_EQ(sample(text, "kjit_namespace_evictions_total", {{"namespace", "team-a"}, {"tier", "disk"}}), 9);
  EXPECT_EQ(sample(text, "kjit_namespace_quota_bytes", {{"namespace", "team-a"}}), 8000);
  EXPECT_EQ(sample(text, "kjit_namespace_stored_bytes", {{"namespace", "(default)"}, {"tier", "memory"}}), 0);
  EXPECT_TRUE(std::isnan(sample(text, "kjit_namespace_quota_bytes", {{"namespace", "(default)"}})))
      << "a namespace without a share has no quota sample";

  EXPECT_NE(text.find("# TYPE kjit_cache_hits_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE kjit_compile_queue_pending gauge"), std::string::npos);

  metrics_.set_sources(fake_sources(/*draining=*/false));
  EXPECT_EQ(sample(scrape(), "kjit_draining"), 0) << "sources are read again at each scrape";
}

TEST_F(MetricsTest, AnEmptySourceLeavesItsMetricsOut) {
  MetricsSources only_workers;
  only_workers.workers = [] { return WorkerCounters{1, 0, {}, 1}; };
  metrics_.set_sources(only_workers);
  const std::string text = scrape();
  EXPECT_EQ(sample(text, "kjit_worker_starts_total"), 1);
  EXPECT_FALSE(has_family(text, "kjit_cache_hits_total"));
  EXPECT_FALSE(has_family(text, "kjit_compile_queue_pending"));
  EXPECT_FALSE(has_family(text, "kjit_draining"));
}

TEST_F(MetricsTest, TextIsWhatAScrapeReads) {
  metrics_.record_request("Compile", 0, "", 0.01);
  metrics_.set_sources(fake_sources(false));
  const std::string text = metrics_.text();
  EXPECT_EQ(sample(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}, {"tenant", ""}}), 1);
  EXPECT_EQ(sample(text, "kjit_compiles_total"), 3);
  EXPECT_EQ(sample(scrape(), "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}, {"tenant", ""}}), 1);
}

TEST_F(MetricsTest, ConcurrentRecordsAreAllCounted) {
  constexpr int k_threads = 4, k_each = 20'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t)
    threads.emplace_back([&, t] {
      const std::string tenant = "tenant-" + std::to_string(t % 2);
      for (int i = 0; i < k_each; ++i) {
        metrics_.record_request("Compile", 0, tenant, 0.0001);
        metrics_.record_hit("memory", 0.00001);
      }
    });
  for (std::thread& t : threads) t.join();
  const std::string text = scrape();
  EXPECT_EQ(sample(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}, {"tenant", "tenant-0"}}),
            2 * k_each);
  EXPECT_EQ(sample(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}, {"tenant", "tenant-1"}}),
            2 * k_each);
  EXPECT_EQ(sample(text, "kjit_cache_hit_duration_seconds_count", {{"tier", "memory"}}), k_threads * k_each);
}

// This thread's CPU time, in nanoseconds: unlike the wall clock it does not
// count the time other processes on a loaded machine had the CPU.
double thread_cpu_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) * 1e9 + double(now.tv_nsec);
}

// A memory hit's whole answer takes a few microseconds; its metrics must
// stay a small part of it. The bound is loose for slow (sanitized) builds.
TEST_F(MetricsTest, RecordingAHitCostsWellUnderAMicrosecond) {
  constexpr int k_calls = 200'000;
  metrics_.record_request("Compile", 0, "team-a", 0.0001);  // the series exist: the steady state
  metrics_.record_hit("memory", 0.00001);
  const double began = thread_cpu_ns();
  for (int i = 0; i < k_calls; ++i) {
    metrics_.record_request("Compile", 0, "team-a", 0.0001);
    metrics_.record_hit("memory", 0.00001);
  }
  const double ns = (thread_cpu_ns() - began) / k_calls;
  std::printf("record_request + record_hit: %.0f ns per call\n", ns);
  EXPECT_LT(ns, 5000) << "recording is far slower than a few hundred ns";
}

TEST(MetricsServe, APortInUseIsAnError) {
  Metrics first;
  ASSERT_TRUE(first.serve("127.0.0.1", 0));
  Metrics second;
  Status taken = second.serve("127.0.0.1", first.port());
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message.find(std::to_string(first.port())), std::string::npos) << taken.error().message;
  EXPECT_EQ(second.port(), 0);
}

TEST(MetricsServe, OtherPathsAreNotFound) {
  Metrics metrics;
  ASSERT_TRUE(metrics.serve("127.0.0.1", 0));
  auto [status, body] = http_get(metrics.port(), "/nothing");
  EXPECT_NE(status.find(" 404"), std::string::npos) << status;
}

}  // namespace
}  // namespace kjit
