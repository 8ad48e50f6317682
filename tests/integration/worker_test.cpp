// Compiles run in worker processes: a compiler that crashes or hangs costs
// one request a clear error, never the daemon.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/fails_with.h"
#include "support/llvm_kernels.h"
#include "test_pipelines.h"
#include "test_plugins.h"

#include "server/workers/compile_workers.h"
#include "server/daemon/daemon_command_line.h"
#include "server/config/pipeline_setup.h"
#include "target/target.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string k_pipelines = llvm_test_pipeline("llvm-crashing", {"test-crash"}, false) +
                                llvm_test_pipeline("llvm-hanging", {"test-hang"}, false) +
                                llvm_test_pipeline("llvm-hanging-with-child", {"test-hang-with-child"}, false);

// The processes whose parent is `parent`, each with its command line.
std::vector<std::pair<pid_t, std::string>> processes_of(pid_t parent) {
  std::vector<std::pair<pid_t, std::string>> out;
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
    out.emplace_back(std::stoi(name), args);
  }
  return out;
}

// The command lines of the processes whose parent is `parent`.
std::vector<std::string> children_of(pid_t parent) {
  std::vector<std::string> out;
  for (const auto& [pid, args] : processes_of(parent)) out.push_back(args);
  return out;
}

// A child of a compile worker (kjitd --worker-fd) of `parent`, or 0.
pid_t worker_child_of(pid_t parent) {
  for (const auto& [worker, args] : processes_of(parent)) {
    if (args.find("--worker-fd") == std::string::npos) continue;
    for (const auto& [child, child_args] : processes_of(worker)) return child;
  }
  return 0;
}

// The scheduling policies of the compile workers of `parent`
// (SCHED_OTHER, SCHED_IDLE), as the kernel has them.
std::vector<int> worker_policies_of(pid_t parent) {
  std::vector<int> out;
  for (const auto& [worker, args] : processes_of(parent))
    if (args.find("--worker-fd") != std::string::npos) out.push_back(::sched_getscheduler(worker));
  return out;
}

// Whether `pid` has ended: no such process, or a zombie (whoever inherited
// it, such as a container's first process, may never reap it).
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t close = line.rfind(')');
  return close != std::string::npos && line.compare(close, 3, ") Z") == 0;
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

// SIGTERM drains: calls in flight get drain_timeout_s, then their compiles
// are killed, and a second SIGTERM stops at once. Either way the daemon
// never waits out a compile's own time bound.
void expect_stop_without_waiting_out_the_compile(const std::vector<std::string>& extra, bool signal_twice) {
  std::vector<std::string> args = {"--plugin", plugin_path("failing_pass_plugin"), "--no-cache", "--compile-timeout",
                                   "120"};
  args.insert(args.end(), extra.begin(), extra.end());
  TestDaemon daemon(DaemonOptions{args, k_pipelines});
  std::optional<Result<CompileResult>> answer;
  std::thread caller([&] {
    auto request = llvm_request(k_llvm_vadd, "cuda:90");
    request.pipeline = "llvm-hanging";
    answer = Client(daemon.socket_path()).compile(request);
  });
  // The compile is in flight once a worker runs it (the daemon keeps
  // workers ready, so a live one alone says nothing).
  EXPECT_TRUE(eventually([&] {
    Result<DaemonStatus> status = Client(daemon.socket_path(), {std::chrono::seconds(5)}).status();
    return status && status->busy_workers >= 1;
  })) << "no worker runs the compile";
  const auto start = std::chrono::steady_clock::now();
  if (signal_twice) {
    daemon.signal(SIGTERM);
    // Draining: the first SIGTERM was taken, so the second is not merged
    // into it while pending.
    EXPECT_TRUE(eventually([&] {
      Result<std::string> health = Client(daemon.socket_path(), {std::chrono::seconds(5)}).health();
      return health && *health == "NOT_SERVING";
    })) << "the daemon did not start draining on SIGTERM";
  }
  const int status = daemon.stop();
  const auto took = std::chrono::steady_clock::now() - start;
  caller.join();
  EXPECT_EQ(status, 0);
  // Far less than the compile's time bound; the margin is for a loaded machine.
  EXPECT_LT(took, 60s) << "the daemon waited for the hanging compile (its time bound is 120 s)";
  ASSERT_TRUE(answer.has_value());
  EXPECT_FALSE(*answer) << "a hanging compile cannot have succeeded";
}

TEST(WorkerShutdown, StoppingTheDaemonDoesNotWaitOutARunningCompile) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  expect_stop_without_waiting_out_the_compile({"--drain-timeout", "2"}, false);
}

TEST(WorkerShutdown, ASecondSigtermStopsWithoutWaitingForTheDrain) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  expect_stop_without_waiting_out_the_compile({"--drain-timeout", "600"}, true);
}

// A toolchain that dies of SIGSEGV at the memory bound (an allocation it
// did not check) crossed the bound; one that dies of it with memory to spare
// crashed.
TEST(WorkerCrash, ASegfaultAtTheMemoryBoundIsTheBoundAndElsewhereACrash) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory leaves no room for an address-space bound";
#endif
  TestDaemon daemon(DaemonOptions{{"--plugin", plugin_path("failing_pass_plugin"), "--no-cache", "--compile-workers",
                                   "1", "--compile-memory", "67108864"},
                                  llvm_test_pipeline("llvm-segfault", {"test-segfault"}, false) +
                                      llvm_test_pipeline("llvm-unchecked", {"test-unchecked-allocation"}, false)});
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-unchecked";
  auto bounded = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(fails_with(bounded, ErrorCode::resource_exhausted, "limits.compile_memory_bytes"));
  request.pipeline = "llvm-segfault";
  auto crashed = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(fails_with(crashed, ErrorCode::internal, "signal 11"));
  EXPECT_TRUE(daemon.running());
}

TEST(WorkerStart, AWorkerThatCannotStartIsAClearErrorNotACrashReport) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  // The daemon loads the plugin, then it disappears: workers started from
  // then on cannot. The one worker the daemon started as it started may
  // have loaded the plugin first; a compile that crashes it (or, when it
  // could not start either, fails for the same reason) makes sure none is.
  const fs::path plugin = fs::temp_directory_path() / ("kjit-vanishing-" + std::to_string(::getpid()) + ".so");
  fs::copy_file(plugin_path("failing_pass_plugin"), plugin, fs::copy_options::overwrite_existing);
  TestDaemon daemon(DaemonOptions{{"--plugin", plugin.string(), "--no-cache", "--compile-workers", "1"}, k_pipelines});
  fs::remove(plugin);
  auto crashing = llvm_request(k_llvm_vadd, "cuda:90");
  crashing.pipeline = "llvm-crashing";
  auto first = Client(daemon.socket_path()).compile(crashing);
  ASSERT_FALSE(first);
  ASSERT_TRUE(first.error().message.find("crashed") != std::string::npos ||
              first.error().message.find("exited with status 1") != std::string::npos)
      << first.error().message;
  auto failed = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(fails_with(failed, ErrorCode::internal, "exited with status 1"));
  EXPECT_EQ(failed.error().message.find("crashed"), std::string::npos) << failed.error().message;
  EXPECT_TRUE(daemon.running());
}

// The pool starts its workers as the daemon starts, and starts another
// when one dies, so a compile never waits for a worker to start and confine
// itself.
TEST(WorkerStart, WorkersAreReadyBeforeTheFirstCompileAndReplacedWhenOneDies) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(DaemonOptions{{"--plugin", plugin_path("failing_pass_plugin"), "--no-cache", "--compile-workers",
                                   "2"},
                                  k_pipelines});
  Client client(daemon.socket_path(), {std::chrono::seconds(30)});
  auto ready = [&](uint32_t count) {
    return eventually([&] {
      Result<DaemonStatus> status = client.status();
      return status && status->ready_workers == count && status->busy_workers == 0;
    });
  };
  ASSERT_TRUE(ready(2)) << "the daemon did not start its workers before any compile";
  EXPECT_EQ(workers_of(daemon.pid()), 2u);
  auto ok = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(ok) << ok.error().message;
  Result<DaemonStatus> after = client.status();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->workers_started, 2u) << "the compile started a worker of its own instead of using a ready one";

  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-crashing";
  ASSERT_TRUE(fails_with(client.compile(request), ErrorCode::internal, "crashed"));
  EXPECT_TRUE(ready(2)) << "the crashed worker was not replaced";
  Result<DaemonStatus> replaced = client.status();
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_EQ(replaced->workers_started, 3u);
}

// Through the daemon: a fleet build (the request for the fleet's other
// target, built in the background) runs in a background worker at
// SCHED_IDLE, beside the client's general worker.
TEST(WorkerClasses, FleetBuildsRunInABackgroundWorkerAtTheLowestPriority) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  DaemonOptions options{{"--compile-workers", "2"}};
  options.config = "[fleet]\ntargets = [\"cuda:90\", \"cuda:80\"]\n";
  TestDaemon daemon(options);
  Client client(daemon.socket_path());
  auto compiled = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  ASSERT_TRUE(eventually([&] {
    auto status = client.status();
    return status && status->fleet.compiled + status->fleet.failed >= 1;
  })) << "the fleet build never ran";
  auto status = client.status();
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(status->fleet.compiled, 1u) << status->fleet.last_failure;
  std::vector<int> policies = worker_policies_of(daemon.pid());
  std::sort(policies.begin(), policies.end());
  EXPECT_EQ(policies, (std::vector<int>{SCHED_OTHER, SCHED_IDLE})) << "one general worker, one background";
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

// The pool in this process with kjitd as its workers' program, configured
// as WorkerTest's daemon is (one worker): what the daemon's admission and
// metrics see of it, its counters and an abandoned compile, which no client
// can drive on its own.
class InProcessWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KJIT_SKIP_WITHOUT_TOOLKIT();
    dir_ = fs::temp_directory_path() / ("kjit-workers-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    start_pool("3");
  }
  // The pool (anew) with this compile time bound in seconds: the tests of
  // abandonment give theirs room, so that nothing but the abandonment
  // stops their compiles however slowly they run.
  void start_pool(const std::string& time_bound_s) {
    workers_.reset();
    const fs::path config = dir_ / "kjitd.toml";
    std::ofstream(config) << k_pipelines;
    std::vector<std::string> args{
        kjitd_path(), "--config",          config.string(), "--plugin", plugin_path("failing_pass_plugin"),
        "--no-cache", "--compile-timeout", time_bound_s};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    int exit_code = 0;
    std::optional<DaemonCommandLine> line = read_command_line(static_cast<int>(argv.size()), argv.data(), exit_code);
    ASSERT_TRUE(line) << "exit code " << exit_code;
    auto pipeline = make_compile_pipeline(line->config);
    ASSERT_TRUE(pipeline) << pipeline.error().message;
    pipeline_ = std::move(pipeline.value());
    CompileWorkers::Options options{line->worker_launch, 1, std::chrono::seconds(line->config.compile_timeout_s),
                                    line->config.compile_bounds};
    workers_ = std::make_unique<CompileWorkers>(std::move(options), kjitd_path());
  }
  void TearDown() override {
    workers_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static CompileJob job(const std::string& pipeline) {
    CompileJob job;
    job.input_kind = InputKind::llvm_ir;
    job.input = k_llvm_vadd;
    job.input_name = "kernel.ll";
    job.target = parse_target("cuda:90").value();
    job.pipeline = pipeline;
    return job;
  }
  Result<Artifact> compile(const std::string& pipeline, const std::function<bool()>& abandoned = {},
                           CompilePriority priority = CompilePriority::client) {
    const CompileJob j = job(pipeline);
    Result<CompilePlan> plan = pipeline_->plan(j);
    if (!plan) return plan.error();
    return workers_->run(j, *plan, /*caller_namespace=*/{}, abandoned, priority);
  }
  // True from `after` on: every request waiting went away then.
  static std::function<bool()> abandoned_after(std::chrono::milliseconds after) {
    const auto at = std::chrono::steady_clock::now() + after;
    return [at] { return std::chrono::steady_clock::now() >= at; };
  }

  fs::path dir_;
  std::shared_ptr<const CompilePipeline> pipeline_;
  std::unique_ptr<CompileWorkers> workers_;
};

TEST_F(InProcessWorkersTest, AnAbandonedCompileKillsItsWorkerAndTheNextCompileGetsANewOne) {
  ASSERT_NO_FATAL_FAILURE(start_pool("60"));
  // A worker ready first: the hanging compile is running, not starting its
  // worker, when it is abandoned.
  Result<Artifact> warm = compile("");
  ASSERT_TRUE(warm) << warm.error().message;
  ASSERT_EQ(workers_->counters().started, 1u);
  // The pool asks whether the compile was abandoned once before it sends the
  // job to the worker, then between waits for the answer: from its second
  // question on, the job is in the worker. It is abandoned then.
  int asked = 0;
  size_t workers_while_running = 0;
  std::chrono::steady_clock::time_point abandoned_at;
  Result<Artifact> abandoned = compile("llvm-hanging", [&] {
    if (++asked < 2) return false;
    workers_while_running = workers_of(::getpid());
    abandoned_at = std::chrono::steady_clock::now();
    return true;
  });
  const auto took = std::chrono::steady_clock::now() - abandoned_at;
  ASSERT_TRUE(fails_with(abandoned, ErrorCode::cancelled, "compile abandoned"));
  // Far less than the time bound; the margin is for a loaded machine.
  EXPECT_LT(took, 10s) << "the compile was not stopped when it was abandoned (its time bound is 60 s)";
  EXPECT_EQ(workers_while_running, 1u);
  EXPECT_EQ(workers_of(::getpid()), 0u) << "the abandoned compile's worker is still there";
  WorkerCounters counters = workers_->counters();
  EXPECT_EQ(counters.kills["cancelled"], 1u);
  EXPECT_EQ(counters.crashed, 0u) << "our own kill is not a crash";
  EXPECT_EQ(counters.live, 0u);

  Result<Artifact> next = compile("");
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_FALSE(next->bytes.empty());
  counters = workers_->counters();
  EXPECT_EQ(counters.started, 2u);
  EXPECT_EQ(counters.live, 1u);
  EXPECT_EQ(counters.kills["cancelled"], 1u);
}

TEST_F(InProcessWorkersTest, ACompileAbandonedWhileWaitingForAWorkerKillsNone) {
  ASSERT_NO_FATAL_FAILURE(start_pool("60"));
  // The one worker hangs until its own compile is abandoned: once the test
  // says so, or after 30 s, so that a pool that never gives the second
  // compile up fails the test rather than hanging it.
  std::atomic<bool> release_first{false};
  std::atomic<int> first_asked{0};
  const auto first_gone = abandoned_after(30s);
  std::optional<Result<Artifact>> first;
  std::thread hanging([&] {
    first.emplace(compile("llvm-hanging", [&] {
      ++first_asked;
      return release_first.load() || first_gone();
    }));
  });
  // Asked once before the job is sent, then between waits for the answer:
  // from the second question on, the job runs in the pool's only worker.
  if (!eventually([&] { return first_asked.load() >= 2; })) {
    release_first = true;
    hanging.join();
    FAIL() << "the hanging compile never ran in a worker";
  }
  // Gives up at its second look, so after waiting for a worker a while.
  int asked = 0;
  std::chrono::steady_clock::time_point abandoned_at;
  Result<Artifact> waiting = compile("", [&] {
    if (++asked < 2) return false;
    abandoned_at = std::chrono::steady_clock::now();
    return true;
  });
  const auto took = std::chrono::steady_clock::now() - abandoned_at;
  const uint64_t killed_meanwhile = workers_->counters().kills["cancelled"];
  release_first = true;
  hanging.join();
  ASSERT_TRUE(fails_with(waiting, ErrorCode::cancelled, "compile abandoned"));
  // The worker is not free before the first compile is released; the margin
  // is for a loaded machine.
  EXPECT_LT(took, 10s) << "it waited for the worker after it was abandoned";
  EXPECT_EQ(killed_meanwhile, 0u) << "a compile that never ran has no worker to kill";
  ASSERT_TRUE(first && fails_with(*first, ErrorCode::cancelled, "compile abandoned"));
  EXPECT_EQ(workers_->counters().kills["cancelled"], 1u);
}

TEST_F(InProcessWorkersTest, ACrashIsCountedAndItsWorkerReplaced) {
  Result<Artifact> crashed = compile("llvm-crashing");
  ASSERT_TRUE(fails_with(crashed, ErrorCode::internal, "crashed"));
  WorkerCounters counters = workers_->counters();
  EXPECT_EQ(counters.started, 1u);
  EXPECT_EQ(counters.crashed, 1u);
  EXPECT_TRUE(counters.kills.empty()) << "a crash is not one of our kills";
  EXPECT_EQ(counters.live, 0u);

  Result<Artifact> ok = compile("");
  ASSERT_TRUE(ok) << ok.error().message;
  counters = workers_->counters();
  EXPECT_EQ(counters.started, 2u);
  EXPECT_EQ(counters.crashed, 1u);
  EXPECT_EQ(counters.live, 1u);
}

TEST_F(InProcessWorkersTest, ACompilePastItsTimeBoundIsAKillByTimeout) {
  Result<Artifact> hung = compile("llvm-hanging", [] { return false; });
  ASSERT_TRUE(fails_with(hung, ErrorCode::deadline_exceeded, "ran longer than 3 s"));
  const WorkerCounters counters = workers_->counters();
  EXPECT_EQ(counters.kills.at("timeout"), 1u);
  EXPECT_EQ(counters.kills.count("cancelled"), 0u);
  EXPECT_EQ(counters.crashed, 0u);
}

// A background compile (a fleet build) runs in a worker of its own at the
// lowest CPU priority, and a client's never does: with one worker allowed,
// a compile of the other class ends the idle worker and starts its own.
TEST_F(InProcessWorkersTest, ABackgroundCompileRunsInAWorkerOfItsOwnAtTheLowestPriority) {
  using Live = std::map<std::string, uint64_t>;
  Result<Artifact> background = compile("", {}, CompilePriority::background);
  ASSERT_TRUE(background) << background.error().message;
  EXPECT_EQ(workers_->counters().live_by_class, (Live{{"general background", 1}}));
  EXPECT_EQ(worker_policies_of(::getpid()), std::vector<int>{SCHED_IDLE});
  EXPECT_NE(workers_->last_start().confinement.find("class: general background, CPU priority SCHED_IDLE"),
            std::string::npos)
      << workers_->last_start().confinement;

  Result<Artifact> client = compile("");
  ASSERT_TRUE(client) << client.error().message;
  WorkerCounters counters = workers_->counters();
  EXPECT_EQ(counters.live_by_class, (Live{{"general", 1}}));
  EXPECT_EQ(counters.started, 2u);
  EXPECT_EQ(worker_policies_of(::getpid()), std::vector<int>{SCHED_OTHER});
  EXPECT_TRUE(workers_->last_start().confinement.ends_with("class: general")) << workers_->last_start().confinement;
  // Ended by the pool to make room: neither a crash nor a kill.
  EXPECT_EQ(counters.crashed, 0u);
  EXPECT_TRUE(counters.kills.empty());

  // The client's worker is reused; the next background compile starts its own again.
  ASSERT_TRUE(compile(""));
  ASSERT_TRUE(compile("", {}, CompilePriority::background));
  counters = workers_->counters();
  EXPECT_EQ(counters.started, 3u);
  EXPECT_EQ(counters.live_by_class, (Live{{"general background", 1}}));
}

// A toolchain that runs a program of its own (a driver and its assembler):
// however its compile is stopped, the program stops with it. A program left
// behind would also hold the worker's stderr open, which the pool reads to
// its end.
class WorkerProcessGroupTest : public InProcessWorkersTest {
 protected:
  void TearDown() override {
    abandon_ = true;  // a compile still running gives up
    if (child_ > 0 && !process_gone(child_)) ::kill(child_, SIGKILL);
    if (compile_.joinable()) compile_.join();
    InProcessWorkersTest::TearDown();
  }

  // Starts a compile whose toolchain starts a program, both hanging, on a
  // thread; returns once the program runs. The compile is abandoned when
  // abandon_ turns true.
  void start() {
    compile_ = std::thread([this] {
      answer_.emplace(compile("llvm-hanging-with-child", [this] { return abandon_.load(); }));
      done_ = true;
    });
    ASSERT_TRUE(eventually([&] { return (child_ = worker_child_of(::getpid())) > 0; }))
        << "the toolchain's program never started";
  }

  // Expects the program gone and the compile answered `code`.
  void expect_stopped(ErrorCode code, const std::string& message) {
    const bool gone = eventually([&] { return process_gone(child_); });
    // Left running, it keeps the pool reading the worker's stderr: the
    // compile could not answer.
    if (!gone) ::kill(child_, SIGKILL);
    EXPECT_TRUE(gone) << "the program the toolchain started (pid " << child_ << ") outlived its stopped compile";
    ASSERT_TRUE(eventually([&] { return done_.load(); })) << "the compile did not answer";
    compile_.join();
    ASSERT_TRUE(answer_ && fails_with(*answer_, code, message));
    EXPECT_EQ(workers_->counters().crashed, 0u) << "our own kill is not a crash";
  }

  std::thread compile_;
  std::atomic<bool> abandon_{false}, done_{false};
  std::optional<Result<Artifact>> answer_;
  pid_t child_ = 0;
};

TEST_F(WorkerProcessGroupTest, AnAbandonedCompileStopsTheProgramsItsToolchainStarted) {
  ASSERT_NO_FATAL_FAILURE(start_pool("60"));
  ASSERT_NO_FATAL_FAILURE(start());
  abandon_ = true;
  ASSERT_NO_FATAL_FAILURE(expect_stopped(ErrorCode::cancelled, "compile abandoned"));
  EXPECT_EQ(workers_->counters().kills["cancelled"], 1u);
}

TEST_F(WorkerProcessGroupTest, ACompilePastItsTimeBoundStopsTheProgramsItsToolchainStarted) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_NO_FATAL_FAILURE(expect_stopped(ErrorCode::deadline_exceeded, "ran longer than 3 s"));
  EXPECT_EQ(workers_->counters().kills["timeout"], 1u);
}

TEST_F(WorkerProcessGroupTest, StoppingThePoolStopsTheProgramsItsToolchainStarted) {
  ASSERT_NO_FATAL_FAILURE(start_pool("60"));
  ASSERT_NO_FATAL_FAILURE(start());
  workers_->stop();
  ASSERT_NO_FATAL_FAILURE(expect_stopped(ErrorCode::unavailable, "shutting down"));
  EXPECT_EQ(workers_->counters().kills["shutdown"], 1u);
}

}  // namespace
}  // namespace kjit::test
