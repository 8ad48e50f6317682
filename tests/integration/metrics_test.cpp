// kjitd's Prometheus metrics through a real daemon: a compile and its memory
// hit, then a scrape of --metrics-port over HTTP shows the request, the
// compile, the hit and the worker that ran it.
#include <gtest/gtest.h>

#include <string>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/llvm_kernels.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit::test {
namespace {

TEST(DaemonMetrics, ACompileAndItsMemoryHitShowInAScrape) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--metrics-port", std::to_string(port)});
  ASSERT_TRUE(daemon.status());
  Client client(daemon.socket_path());
  auto compiled = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  auto hit = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(hit) << hit.error().message;

  const std::string text = scrape_metrics(port);
  ASSERT_FALSE(text.empty()) << "no metrics on 127.0.0.1:" << port;
  EXPECT_GE(metric_total(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}}), 2) << text;
  EXPECT_GE(metric_total(text, "kjit_request_duration_seconds_count", {{"method", "Compile"}}), 2) << text;
  EXPECT_GE(metric_total(text, "kjit_compile_duration_seconds_count", {{"result", "ok"}}), 1) << text;
  EXPECT_GE(metric_total(text, "kjit_cache_hits_total", {{"tier", "memory"}}), 1) << text;
  EXPECT_GE(metric_total(text, "kjit_cache_hit_duration_seconds_count", {{"tier", "memory"}}), 1) << text;
  EXPECT_GE(metric_total(text, "kjit_compiles_total"), 1) << text;
  EXPECT_GE(metric_total(text, "kjit_worker_starts_total"), 1) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_crashes_total"), 0) << text;
  EXPECT_EQ(metric_total(text, "kjit_draining"), 0) << text;
}

TEST(DaemonMetrics, ARefusedRequestIsCountedUnderItsCodesName) {
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--metrics-port", std::to_string(port)});
  ASSERT_TRUE(daemon.status());
  auto refused = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:no-such-arch"));
  ASSERT_FALSE(refused);
  ASSERT_EQ(refused.error().code, ErrorCode::invalid_argument) << refused.error().message;

  const std::string text = scrape_metrics(port);
  ASSERT_FALSE(text.empty()) << "no metrics on 127.0.0.1:" << port;
  EXPECT_EQ(metric_total(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "INVALID_ARGUMENT"}}), 1)
      << text;
  EXPECT_EQ(metric_total(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}}), -1) << text;
  EXPECT_EQ(metric_total(text, "kjit_compile_duration_seconds_count"), 0) << "nothing was compiled:\n" << text;
}

}  // namespace
}  // namespace kjit::test
