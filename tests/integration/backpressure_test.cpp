// Backpressure through a real daemon: a bounded compile queue (global and per
// tenant) that refuses with a retry hint, fair slots between tenants,
// deadlines and cancellations that free their slot and stop their compile,
// and SIGTERM's drain.
#include <gtest/gtest.h>
#include <signal.h>

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include "kjit/client.h"
#include "kjit/v1/compiler.grpc.pb.h"
#include "pipeline/cache_key.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/llvm_kernels.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"
#include "temp_dir.h"
#include "test_pipelines.h"
#include "test_plugins.h"

namespace kjit::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// "llvm-slow": 1.5 s in a pass (or test-slow.ms), then a normal compile;
// "llvm-hanging": never ends.
const std::string k_pipelines = llvm_test_pipeline("llvm-slow", {"test-slow"}, false) +
                                llvm_test_pipeline("llvm-hanging", {"test-hang"}, false);

// How long a slow compile runs while a test acts on the daemon around it:
// ample for a loaded machine to get through a few calls.
const std::string k_long_ms = "10000";

std::string tenants_text() {
  return "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" + sha256_hex("alpha-token") + "\"\n" +
         "[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" + sha256_hex("beta-token") + "\"\n";
}

class BackpressureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KJIT_SKIP_WITHOUT_TOOLKIT();
    tenants_path_ = temp_.path() + "/tenants.toml";
    std::ofstream(tenants_path_) << tenants_text();
  }

  // One worker, no cache (every request compiles: nothing is coalesced),
  // and the metrics on metrics_port_, where a test sees the queue.
  DaemonOptions options(std::vector<std::string> more = {}) {
    metrics_port_ = free_loopback_port();
    std::vector<std::string> args = {"--plugin", plugin_path("failing_pass_plugin"), "--no-cache",
                                     "--compile-workers", "1", "--compile-timeout", "120", "--tenants", tenants_path_,
                                     "--metrics-port", std::to_string(metrics_port_)};
    args.insert(args.end(), more.begin(), more.end());
    return DaemonOptions{args, k_pipelines};
  }

  // Waits (bounded) until the compile queue's gauge `name` (with `labels`)
  // reads `value`: requests sent from other threads are in the queue.
  bool queue_reads(const std::string& name, double value, const MetricLabels& labels = {}) const {
    return eventually([&] { return metric_total(scrape_metrics(metrics_port_), name, labels) == value; });
  }
  // Waits (bounded) until a compile holds the daemon's worker.
  static bool worker_busy(const DaemonProcess& daemon) {
    return eventually([&] {
      Result<DaemonStatus> status = Client(daemon.socket_path(), {std::chrono::seconds(5)}).status();
      return status && status->busy_workers >= 1;
    });
  }

  static std::unique_ptr<v1::Compiler::Stub> stub(const DaemonProcess& daemon) {
    return v1::Compiler::NewStub(grpc::CreateChannel("unix:" + daemon.socket_path(), grpc::InsecureChannelCredentials()));
  }

  struct Answer {
    grpc::Status status;
    std::string retry_after;  // kjit-retry-after-ms
    std::string pushback;     // grpc-retry-pushback-ms
    Clock::duration took{};
  };
  // `tag` makes the source unique, so no two requests are the same compile.
  // `slow_ms`: how long the "llvm-slow" pass takes, when not its default.
  static Answer compile(v1::Compiler::Stub& compiler, const std::string& pipeline, const std::string& token,
                        int tag, std::chrono::milliseconds deadline = 60s, grpc::ClientContext* given = nullptr,
                        const std::string& slow_ms = "") {
    v1::CompileRequest request;
    request.mutable_input()->set_kind(v1::INPUT_KIND_LLVM_IR);
    request.mutable_input()->set_name("kernel.ll");
    request.mutable_input()->set_data(std::string(k_llvm_vadd) + "\n; request " + std::to_string(tag) + "\n");
    request.set_target("cuda:90");
    request.set_pipeline(pipeline);
    if (!slow_ms.empty()) (*request.mutable_pass_args())["test-slow.ms"] = slow_ms;
    grpc::ClientContext own;
    grpc::ClientContext& context = given ? *given : own;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::CompileResponse response;
    Answer answer;
    const auto start = Clock::now();
    answer.status = compiler.Compile(&context, request, &response);
    answer.took = Clock::now() - start;
    auto trailer = [&](const char* key) {
      auto found = context.GetServerTrailingMetadata().find(key);
      return found == context.GetServerTrailingMetadata().end() ? std::string()
                                                                 : std::string(found->second.data(), found->second.size());
    };
    answer.retry_after = trailer("kjit-retry-after-ms");
    answer.pushback = trailer("grpc-retry-pushback-ms");
    return answer;
  }

  TempDir temp_;
  std::string tenants_path_;
  uint16_t metrics_port_ = 0;
};

TEST_F(BackpressureTest, OneTenantsFloodDoesNotStarveAnother) {
  TestDaemon daemon(options({"--max-pending-per-tenant", "32"}));
  auto compiler = stub(daemon);
  std::mutex mutex;
  std::vector<std::string> finished;  // who finished, in order
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  auto run = [&](const std::string& who, const std::string& token, int tag, const std::string& slow_ms) {
    Answer answer = compile(*compiler, "llvm-slow", token, tag, 120s, nullptr, slow_ms);
    if (!answer.status.ok()) {
      ++failures;
      ADD_FAILURE() << who << ": " << answer.status.error_message();
    }
    std::lock_guard lock(mutex);
    finished.push_back(who);
  };
  // alpha's first runs long, so that the rest of the flood and beta are
  // queued behind it however slowly they arrive; then alpha's four others.
  clients.emplace_back(run, "alpha", "alpha-token", 0, k_long_ms);
  EXPECT_TRUE(queue_reads("kjit_compile_queue_running", 1)) << "alpha's first compile did not start";
  for (int i = 1; i < 5; ++i) clients.emplace_back(run, "alpha", "alpha-token", i, "");
  EXPECT_TRUE(queue_reads("kjit_compile_queue_pending_by_tenant", 5, {{"tenant", "alpha"}}))
      << "alpha's five are not in the queue";
  clients.emplace_back(run, "beta", "beta-token", 100, "");
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(finished.size(), 6u);
  const size_t beta_at = std::find(finished.begin(), finished.end(), "beta") - finished.begin();
  // First come first served would finish beta last (index 5); served in
  // turn, it runs right after the compile that was running (index 1), or
  // one later if alpha's next had already been granted.
  EXPECT_LE(beta_at, 2u) << "beta finished " << beta_at + 1 << "th of 6";
}

TEST_F(BackpressureTest, AFullQueueRefusesAtOnceWithARetryHint) {
  TestDaemon daemon(options({"--max-pending-per-tenant", "2", "--max-pending-compiles", "3"}));
  auto compiler = stub(daemon);
  // alpha's two hanging compiles: one runs, one waits; both pending until
  // their deadline, long enough for the test to look at the full queue
  // however slowly it runs.
  constexpr auto k_held = 15s;
  std::vector<std::thread> holders;
  for (int i = 0; i < 2; ++i)
    holders.emplace_back([&, i] { compile(*compiler, "llvm-hanging", "alpha-token", i, k_held); });
  EXPECT_TRUE(queue_reads("kjit_compile_queue_pending_by_tenant", 2, {{"tenant", "alpha"}}))
      << "alpha's two are not in the queue";
  Answer over_tenant = compile(*compiler, "llvm-slow", "alpha-token", 10);
  EXPECT_EQ(over_tenant.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over_tenant.status.error_message();
  EXPECT_NE(over_tenant.status.error_message().find("max_pending_per_tenant"), std::string::npos)
      << over_tenant.status.error_message();
  EXPECT_NE(over_tenant.status.error_message().find("retry in"), std::string::npos);
  EXPECT_EQ(over_tenant.retry_after, "1000");
  EXPECT_EQ(over_tenant.pushback, "1000");
  // Waiting in the queue would take until the holders' deadline; the margin
  // is for a loaded machine.
  EXPECT_LT(over_tenant.took, 5s) << "a refusal must not wait in the queue";
  // beta still has room: the third place of the daemon's three.
  std::thread beta_waits([&] { compile(*compiler, "llvm-hanging", "beta-token", 20, k_held); });
  EXPECT_TRUE(queue_reads("kjit_compile_queue_pending", 3)) << "beta's is not in the queue";
  Answer over_all = compile(*compiler, "llvm-slow", "", 30);  // the operator: its own bound, but the daemon is full
  EXPECT_EQ(over_all.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << over_all.status.error_message();
  EXPECT_NE(over_all.status.error_message().find("max_pending_compiles"), std::string::npos)
      << over_all.status.error_message();
  for (std::thread& t : holders) t.join();
  beta_waits.join();
  // Their deadlines passed: their places and the worker are free again, once
  // the daemon has seen the calls go (it looks every few milliseconds).
  EXPECT_TRUE(queue_reads("kjit_compile_queue_pending", 0)) << "the places of calls past their deadline stay taken";
  Answer after = compile(*compiler, "llvm-slow", "alpha-token", 40, 30s);
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
}

TEST_F(BackpressureTest, APassedDeadlineStopsTheCompileAndFreesTheWorker) {
  TestDaemon daemon(options());
  auto compiler = stub(daemon);
  Answer hung = compile(*compiler, "llvm-hanging", "beta-token", 1, 1500ms);
  EXPECT_EQ(hung.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // With one worker, this compile could only start once the hanging one was
  // killed (the compile time bound is 120 s).
  Answer next = compile(*compiler, "llvm-slow", "beta-token", 2, 90s);
  EXPECT_TRUE(next.status.ok()) << next.status.error_message();
  EXPECT_LT(next.took, 60s);  // far less than the time bound; the margin is for a loaded machine
}

TEST_F(BackpressureTest, ACancelledRequestStopsItsCompile) {
  TestDaemon daemon(options());
  auto compiler = stub(daemon);
  grpc::ClientContext context;
  std::thread cancel([&] {
    // Cancelled once the compile holds the worker (or when that never comes).
    EXPECT_TRUE(worker_busy(daemon)) << "the hanging compile never reached a worker";
    context.TryCancel();
  });
  Answer hung = compile(*compiler, "llvm-hanging", "", 1, 60s, &context);
  cancel.join();
  EXPECT_EQ(hung.status.error_code(), grpc::StatusCode::CANCELLED);
  Answer next = compile(*compiler, "llvm-slow", "", 2, 90s);
  EXPECT_TRUE(next.status.ok()) << next.status.error_message();
  EXPECT_LT(next.took, 60s);  // far less than the time bound; the margin is for a loaded machine
}

TEST_F(BackpressureTest, SigtermDrainsCallsInFlightAndRefusesNewOnes) {
  TestDaemon daemon(options({"--drain-timeout", "60"}));
  auto compiler = stub(daemon);
  Answer in_flight;
  // Long enough that the daemon still drains it while the test looks.
  std::thread slow([&] { in_flight = compile(*compiler, "llvm-slow", "", 1, 120s, nullptr, k_long_ms); });
  EXPECT_TRUE(worker_busy(daemon)) << "the slow compile never reached a worker";
  daemon.signal(SIGTERM);
  // The signal is taken on another thread: health turns NOT_SERVING as the
  // drain starts, and the test waits for that (bounded).
  std::string health = "(not asked)";
  const bool not_serving = eventually([&] {
    Result<std::string> answer = Client(daemon.socket_path(), {std::chrono::seconds(5)}).health();
    health = answer ? *answer : "error: " + answer.error().message;
    return health == "NOT_SERVING";
  });
  Answer refused = compile(*compiler, "llvm-slow", "", 2);
  slow.join();
  EXPECT_TRUE(not_serving) << "health while draining: " << health;
  EXPECT_TRUE(in_flight.status.ok()) << "the call in flight was not drained: " << in_flight.status.error_message();
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.status.error_message();
  EXPECT_NE(refused.status.error_message().find("draining"), std::string::npos) << refused.status.error_message();
  EXPECT_EQ(daemon.stop(), 0);
}

}  // namespace
}  // namespace kjit::test

namespace kjit::test {
namespace {

// --log-file, and SIGHUP reopening it after logrotate moved it away.
TEST(DaemonLogFile, SighupReopensTheLogFileUnderItsName) {
  TempDir dir;
  const std::string log = dir.path() + "/kjitd.log";
  TestDaemon daemon(DaemonOptions{{"--log-file", log, "--log-level", "info"}});
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // The last line of its start-up, written just after it starts answering.
  EXPECT_TRUE(eventually([&] { return read(log).find("kjitd listening on") != std::string::npos; })) << read(log);
  std::filesystem::rename(log, log + ".1");  // what logrotate does
  daemon.signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(log); })) << "SIGHUP did not reopen " << log;
  EXPECT_TRUE(Client(daemon.socket_path()).health());
  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_NE(read(log).find("kjitd stopped"), std::string::npos) << "the new file:\n" << read(log);
  EXPECT_EQ(read(log + ".1").find("kjitd stopped"), std::string::npos) << "lines after SIGHUP went to the old file";
  EXPECT_NE(read(log).find("log file reopened"), std::string::npos) << read(log);
}

}  // namespace
}  // namespace kjit::test
