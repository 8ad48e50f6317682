// Fleet builds through a real daemon: with `[fleet] targets` naming two CUDA
// targets, a kernel compiled for one is built in the background for the
// other, which then answers from the cache; the metrics count one
// background build and the background worker it ran in, and `kjit health
// --verbose` shows both.
#include <gtest/gtest.h>

#include <string>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/llvm_kernels.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit::test {
namespace {

TEST(Fleet, ACompileForOneTargetBecomesAHitForTheOther) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  DaemonOptions options{{"--metrics-port", std::to_string(port)}};
  options.config = "[fleet]\ntargets = [\"cuda:80\", \"cuda:90\"]\n";
  TestDaemon daemon(std::move(options));
  ASSERT_TRUE(daemon.status());
  Client client(daemon.socket_path());

  auto compiled = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_EQ(compiled->cache, "compiled");

  std::string text;
  const bool built = eventually([&] {
    text = scrape_metrics(port);
    return metric_sample(text, "kjit_fleet_builds_total", {{"result", "compiled"}}) == 1;
  });
  ASSERT_TRUE(built) << text;
  EXPECT_EQ(metric_sample(text, "kjit_fleet_builds_total", {{"result", "failed"}}), 0) << text;
  EXPECT_EQ(metric_sample(text, "kjit_fleet_queue_length"), 0) << text;
  // The build ran in a background worker, which stays beside the general ones.
  EXPECT_EQ(metric_sample(text, "kjit_workers_live_by_class", {{"class", "general background"}}), 1) << text;
  EXPECT_GE(metric_sample(text, "kjit_workers_live_by_class", {{"class", "general"}}), 1) << text;
  EXPECT_EQ(metric_sample(text, "kjit_workers_live_by_class", {{"class", "tileir"}}), 0) << text;

  auto hit = client.compile(llvm_request(k_llvm_vadd, "cuda:80"));
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_EQ(hit->cache, "memory");
  EXPECT_EQ(hit->target, "cuda:80");
  // A hit queues nothing: still the one background build.
  text = scrape_metrics(port);
  EXPECT_EQ(metric_total(text, "kjit_fleet_builds_total"), 1) << text;

  CommandResult health = run_command({kjit_cli_path(), "health", "--verbose", "--socket", daemon.socket_path()});
  ASSERT_EQ(health.exit_code, 0) << health.err;
  EXPECT_NE(health.out.find("fleet builds (cuda:80, cuda:90): 0 queued, 0 running; since start 1 compiled"),
            std::string::npos)
      << health.out;
  EXPECT_NE(health.out.find("  by class: "), std::string::npos) << health.out;
  EXPECT_NE(health.out.find("1 general background"), std::string::npos) << health.out;
}

}  // namespace
}  // namespace kjit::test
