// Compiles run in worker processes: a compiler that crashes or hangs costs
// one request a clear error, never the daemon.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/fails_with.h"
#include "support/llvm_kernels.h"
#include "test_pipelines.h"
#include "test_plugins.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string k_pipelines = llvm_test_pipeline("llvm-crashing", {"test-crash"}, false) +
                                llvm_test_pipeline("llvm-hanging", {"test-hang"}, false);

// The command lines of the processes whose parent is `parent`.
std::vector<std::string> children_of(pid_t parent) {
  std::vector<std::string> out;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    out.push_back(args);
  }
  return out;
}

// How many compile workers (kjitd --worker-fd) `daemon` has.
size_t workers_of(pid_t daemon) {
  size_t workers = 0;
  for (const std::string& args : children_of(daemon))
    if (args.find("--worker-fd") != std::string::npos) ++workers;
  return workers;
}

class WorkerTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() {
    start_daemon(DaemonOptions{{"--plugin", plugin_path("failing_pass_plugin"), "--no-cache", "--compile-workers", "2",
                                "--compile-timeout", "3"},
                               k_pipelines});
  }

  // A compile the daemon must still do after a worker died.
  static void expect_daemon_still_compiles() {
    auto ok = client().compile(llvm_request(k_llvm_vadd, "cuda:90"));
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_FALSE(ok->artifact.empty());
    EXPECT_TRUE(daemon_->running());
  }
};

TEST_F(WorkerTest, CompilesRunInWorkerProcessesOfTheDaemon) {
  auto ok = client().compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  const size_t workers = workers_of(daemon_->pid());
  EXPECT_GE(workers, 1u) << "no kjitd --worker-fd child after a compile";
  EXPECT_LE(workers, 2u) << "more workers than --compile-workers 2";
}

TEST_F(WorkerTest, ACrashingCompilerIsAnInternalErrorAndTheDaemonGoesOn) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-crashing";
  auto crashed = client().compile(request);
  ASSERT_TRUE(fails_with(crashed, ErrorCode::internal, "crashed"));
  EXPECT_NE(crashed.error().message.find("signal 6"), std::string::npos) << crashed.error().message;
  expect_daemon_still_compiles();
}

TEST_F(WorkerTest, AHangingCompilerIsStoppedAtTheTimeBound) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-hanging";
  const auto start = std::chrono::steady_clock::now();
  auto hung = client().compile(request);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(fails_with(hung, ErrorCode::deadline_exceeded, "compile_timeout_s"));
  EXPECT_GE(took, 3s);
  EXPECT_LT(took, 30s);
  expect_daemon_still_compiles();
}

TEST_F(WorkerTest, ConcurrentCrashesAndCompilesEachGetTheirOwnAnswer) {
  std::vector<std::thread> threads;
  std::atomic<int> crashed{0}, compiled{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      auto request = llvm_request(k_llvm_vadd, "cuda:90");
      if (i % 2 == 0) request.pipeline = "llvm-crashing";
      auto result = client().compile(request);
      if (i % 2 == 0 && !result && result.error().code == ErrorCode::internal) ++crashed;
      if (i % 2 == 1 && result) ++compiled;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(crashed.load(), 3);
  EXPECT_EQ(compiled.load(), 3);
  EXPECT_TRUE(daemon_->running());
}

TEST(WorkerConfig, TheConfigFileSetsTheWorkersAndTheTimeBound) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(DaemonOptions{{"--plugin", plugin_path("failing_pass_plugin"), "--no-cache"},
                                  "compile_workers = 1\n" + k_pipelines + "\n[limits]\ncompile_timeout_s = 2\n"});
  fs::remove(daemon.config_path());  // workers get the text the daemon read, not the file
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-hanging";
  auto hung = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(fails_with(hung, ErrorCode::deadline_exceeded, "longer than 2 s"));
  auto ok = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(workers_of(daemon.pid()), 1u);
}

TEST(WorkerShutdown, StoppingTheDaemonDoesNotWaitOutARunningCompile) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(DaemonOptions{
      {"--plugin", plugin_path("failing_pass_plugin"), "--no-cache", "--compile-timeout", "120"}, k_pipelines});
  std::optional<Result<CompileResult>> answer;
  std::thread caller([&] {
    auto request = llvm_request(k_llvm_vadd, "cuda:90");
    request.pipeline = "llvm-hanging";
    answer = Client(daemon.socket_path()).compile(request);
  });
  std::this_thread::sleep_for(1s);  // the compile is in its worker by now
  const auto start = std::chrono::steady_clock::now();
  const int status = daemon.stop();
  const auto took = std::chrono::steady_clock::now() - start;
  caller.join();
  EXPECT_EQ(status, 0);
  EXPECT_LT(took, 20s) << "the daemon waited for the hanging compile (its time bound is 120 s)";
  ASSERT_TRUE(answer.has_value());
  EXPECT_FALSE(*answer) << "a hanging compile cannot have succeeded";
}

TEST(WorkerStart, AWorkerThatCannotStartIsAClearErrorNotACrashReport) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  // The daemon loads the plugin, then it disappears: workers cannot.
  const fs::path plugin = fs::temp_directory_path() / ("kjit-vanishing-" + std::to_string(::getpid()) + ".so");
  fs::copy_file(plugin_path("failing_pass_plugin"), plugin, fs::copy_options::overwrite_existing);
  TestDaemon daemon({"--plugin", plugin.string(), "--no-cache"});
  fs::remove(plugin);
  auto failed = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(fails_with(failed, ErrorCode::internal, "exited with status 1"));
  EXPECT_EQ(failed.error().message.find("crashed"), std::string::npos) << failed.error().message;
  EXPECT_TRUE(daemon.running());
}

TEST(WorkerConfig, ANegativeWorkerCountIsAConfigurationError) {
  CommandResult r = run_kjitd({}, "compile_workers = -1\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("compile_workers"), std::string::npos) << r.err;
}

TEST(WorkerlessDaemon, CompileWorkersZeroCompilesInsideTheDaemon) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon({"--no-cache", "--compile-workers", "0"});
  auto ok = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(workers_of(daemon.pid()), 0u) << "a worker was started with --compile-workers 0";
}

}  // namespace
}  // namespace kjit::test
