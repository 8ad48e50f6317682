// Compiles run in worker processes: a compiler that crashes or hangs costs
// one request a clear error, never the daemon.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <atomic>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "daemon_process.h"
#include "kjit/client.h"
#include "llvm_kernels.h"
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

class WorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    config_ = fs::temp_directory_path() / ("kjit-worker-test-" + std::to_string(::getpid()) + ".toml");
    std::ofstream(config_) << k_pipelines;
    daemon_ = new DaemonProcess({"--config", config_.string(), "--plugin", plugin_path("failing_pass_plugin"),
                                 "--no-cache", "--compile-workers", "2", "--compile-timeout", "3"});
  }
  static void TearDownTestSuite() {
    delete daemon_;
    fs::remove(config_);
  }
  void SetUp() override {
#ifndef KJIT_TEST_HAVE_TOOLKIT
    GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  }
  static Client client() { return Client(daemon_->socket_path()); }

  // A compile the daemon must still do after a worker died.
  static void expect_daemon_still_compiles() {
    auto ok = client().compile(llvm_request(k_llvm_vadd, "cuda:90"));
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_FALSE(ok->artifact.empty());
    EXPECT_TRUE(daemon_->running());
  }

  static DaemonProcess* daemon_;
  static fs::path config_;
};
DaemonProcess* WorkerTest::daemon_ = nullptr;
fs::path WorkerTest::config_;

TEST_F(WorkerTest, CompilesRunInWorkerProcessesOfTheDaemon) {
  auto ok = client().compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  size_t workers = 0;
  for (const std::string& args : children_of(daemon_->pid()))
    if (args.find("--worker-fd") != std::string::npos) ++workers;
  EXPECT_GE(workers, 1u) << "no kjitd --worker-fd child after a compile";
  EXPECT_LE(workers, 2u) << "more workers than --compile-workers 2";
}

TEST_F(WorkerTest, ACrashingCompilerIsAnInternalErrorAndTheDaemonGoesOn) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-crashing";
  auto crashed = client().compile(request);
  ASSERT_FALSE(crashed);
  EXPECT_EQ(crashed.error().code, ErrorCode::internal);
  EXPECT_NE(crashed.error().message.find("crashed"), std::string::npos) << crashed.error().message;
  EXPECT_NE(crashed.error().message.find("signal 6"), std::string::npos) << crashed.error().message;
  expect_daemon_still_compiles();
}

TEST_F(WorkerTest, AHangingCompilerIsStoppedAtTheTimeBound) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-hanging";
  const auto start = std::chrono::steady_clock::now();
  auto hung = client().compile(request);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(hung);
  EXPECT_EQ(hung.error().code, ErrorCode::deadline_exceeded);
  EXPECT_NE(hung.error().message.find("compile_timeout_s"), std::string::npos) << hung.error().message;
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
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  const fs::path config = fs::temp_directory_path() / ("kjit-worker-config-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << "compile_workers = 1\n" << k_pipelines << "\n[limits]\ncompile_timeout_s = 2\n";
  DaemonProcess daemon({"--config", config.string(), "--plugin", plugin_path("failing_pass_plugin"), "--no-cache"});
  fs::remove(config);  // workers get the text the daemon read, not the file
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-hanging";
  auto hung = Client(daemon.socket_path()).compile(request);
  ASSERT_FALSE(hung);
  EXPECT_EQ(hung.error().code, ErrorCode::deadline_exceeded);
  EXPECT_NE(hung.error().message.find("longer than 2 s"), std::string::npos) << hung.error().message;
  auto ok = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  size_t workers = 0;
  for (const std::string& args : children_of(daemon.pid()))
    if (args.find("--worker-fd") != std::string::npos) ++workers;
  EXPECT_EQ(workers, 1u);
}

TEST(WorkerShutdown, StoppingTheDaemonDoesNotWaitOutARunningCompile) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  const fs::path config = fs::temp_directory_path() / ("kjit-worker-stop-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << k_pipelines;
  DaemonProcess daemon({"--config", config.string(), "--plugin", plugin_path("failing_pass_plugin"), "--no-cache",
                        "--compile-timeout", "120"});
  fs::remove(config);
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
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  // The daemon loads the plugin, then it disappears: workers cannot.
  const fs::path plugin = fs::temp_directory_path() / ("kjit-vanishing-" + std::to_string(::getpid()) + ".so");
  fs::copy_file(plugin_path("failing_pass_plugin"), plugin, fs::copy_options::overwrite_existing);
  DaemonProcess daemon({"--plugin", plugin.string(), "--no-cache"});
  fs::remove(plugin);
  auto failed = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::internal);
  EXPECT_NE(failed.error().message.find("exited with status 1"), std::string::npos) << failed.error().message;
  EXPECT_EQ(failed.error().message.find("crashed"), std::string::npos) << failed.error().message;
  EXPECT_TRUE(daemon.running());
}

TEST(WorkerConfig, ANegativeWorkerCountIsAConfigurationError) {
  const fs::path config = fs::temp_directory_path() / ("kjit-worker-bad-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(config) << "compile_workers = -1\n";
  CommandResult r = run_command({kjitd_path(), "--config", config.string(), "--socket",
                                 (fs::temp_directory_path() / ("kjit-bad-" + std::to_string(::getpid()) + ".sock")).string()});
  fs::remove(config);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("compile_workers"), std::string::npos) << r.err;
}

TEST(WorkerlessDaemon, CompileWorkersZeroCompilesInsideTheDaemon) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  DaemonProcess daemon({"--no-cache", "--compile-workers", "0"});
  auto ok = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  for (const std::string& args : children_of(daemon.pid()))
    EXPECT_EQ(args.find("--worker-fd"), std::string::npos) << "a worker was started with --compile-workers 0";
}

}  // namespace
}  // namespace kjit::test
