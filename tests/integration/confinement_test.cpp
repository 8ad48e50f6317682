// A request never reaches the daemon's host: hostile includes sent straight
// to a daemon (no client-side resolution) are refused or fail to open, and a
// pass running inside a confined compile worker can neither read nor write
// a host file, nor open a socket, nor run a program (only Tile IR workers
// may run one: tileiras). A worker that dies is reported with its own last
// words, and never with another request's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "kjit/client.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/hostile_includes.h"
#include "support/llvm_kernels.h"
#include "temp_dir.h"
#include "test_pipelines.h"
#include "test_plugins.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_secret = "KJIT-HOST-SECRET-7f3a9c";

// The passes of the host-probe plugin, each in a pipeline of its own.
std::string test_pipelines() {
  return llvm_test_pipeline("probe", {"host-probe"}, false) + llvm_test_pipeline("loud", {"loud-pass"}, true) +
         llvm_test_pipeline("loud-crash", {"loud-crash"}, false) +
         pipeline_toml("inject", "cuda-source",
                       {{"nvrtc", "cuda-source", "ptx", {"include-injector", "nvrtc-compile"}},
                        {"nvjitlink", "ptx", "cubin", {"nvjitlink-link"}}});
}

std::string everything_said(const Error& error) { return error.message + "\n" + error.log; }

// The tileiras the daemon's Tile IR workers may run, as its confinement
// description names it; nullopt when it found none.
std::optional<std::string> tileiras_named_in(const std::string& description) {
  const std::string lead = "for Tile IR they may run exactly ";
  const size_t at = description.find(lead);
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + lead.size();
  return description.substr(from, description.find(" and ", from) - from);
}

// A request whose pass, in a general worker (LLVM IR input), tries to run
// `program`.
CompileRequest exec_probe(const std::string& program) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "probe";
  request.pass_args = {{"host-probe.exec", program}};
  return request;
}

// The daemons of the tests: one worker, so that the tests that follow one
// request with another have the second run where the first ran.
DaemonOptions probe_daemon(std::vector<std::string> more_args = {}) {
  DaemonOptions options{{"--plugin", plugin_path("host_probe_plugin"), "--no-cache", "--compile-workers", "1"},
                        test_pipelines()};
  options.args.insert(options.args.end(), more_args.begin(), more_args.end());
  return options;
}

class ConfinementTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() {
    secret_dir_ = std::make_unique<TempDir>();
    secret_ = fs::path(secret_dir_->path()) / "secret.h";
    std::ofstream(secret_) << "#error " << k_secret << "\nint " << k_secret[0] << ";\n";
    start_daemon(probe_daemon());
  }
  static void TearDownTestSuite() {
    ToolkitDaemonTest::TearDownTestSuite();
    secret_dir_.reset();
  }

  // vector_add, with an include of the secret that a pass adds in the worker.
  static CompileRequest injected_include() {
    CompileRequest request;
    request.input = k_vector_add;
    request.input_name = "vadd.cu";
    request.target = "cuda:90";
    request.pipeline = "inject";
    request.pass_args = {{"include-injector.path", secret_.string()}};
    return request;
  }

  static inline std::unique_ptr<TempDir> secret_dir_;
  static inline fs::path secret_;
};

// Every spelling under every language standard: some only reach NVRTC as an
// include under one of them (trigraphs up to C++14, no raw strings in C++03).
TEST_F(ConfinementTest, HostileIncludesNeverBringBackAHostFile) {
  size_t sent = 0;
  for (const HostileInclude& hostile : hostile_includes()) {
    for (const char* standard : {"c++03", "c++11", "c++14", "c++17", "c++20"}) {
      CompileRequest request;
      request.input = instantiate(hostile.source_template, secret_.string());
      request.input_name = "hostile.cu";
      request.target = "cuda:90";
      request.options = {std::string("-std=") + standard};
      auto answer = client().compile(request);
      ++sent;
      ASSERT_FALSE(answer) << hostile.name << " compiled with -std=" << standard;
      const std::string said = everything_said(answer.error());
      EXPECT_EQ(said.find(k_secret), std::string::npos)
          << hostile.name << " with -std=" << standard << " brought back the file:\n" << said;
      EXPECT_EQ(answer.error().code, ErrorCode::invalid_argument) << hostile.name << ": " << said;
    }
  }
  EXPECT_GT(sent, 300u) << "the hostile suite shrank";
  EXPECT_TRUE(daemon_->running());
}

TEST_F(ConfinementTest, HostileHeaderNamesAreRefusedBeforeCompiling) {
  for (const std::string& name : {secret_.string(), std::string("../../../../../../..") + secret_.string(),
                                  std::string("a/../../b.h"), std::string("/etc/passwd")}) {
    CompileRequest request;
    request.input = "#include \"x.h\"\n__global__ void k() {}\n";
    request.input_name = "k.cu";
    request.target = "cuda:90";
    request.headers = {{"x.h", "int x;\n"}, {name, "int y;\n"}};
    auto answer = client().compile(request);
    ASSERT_FALSE(answer) << name;
    EXPECT_EQ(answer.error().code, ErrorCode::invalid_argument) << name;
    EXPECT_NE(answer.error().message.find("header name"), std::string::npos) << answer.error().message;
  }
}

// The include policy is the first line of defence; this include reaches
// NVRTC behind it (a pass adds it inside the worker), so only the
// confinement stands between the request and the file.
TEST_F(ConfinementTest, AnIncludeThePolicyMissedCannotBeOpened) {
  auto answer = client().compile(injected_include());
  ASSERT_FALSE(answer);
  const std::string said = everything_said(answer.error());
  EXPECT_EQ(said.find(k_secret), std::string::npos) << said;
  EXPECT_NE(said.find("cannot open"), std::string::npos) << said;
  EXPECT_EQ(answer.error().code, ErrorCode::invalid_argument) << said;
}

TEST_F(ConfinementTest, AWorkerCannotReadWriteOrConnectOnTheHost) {
  const fs::path written = fs::path(secret_dir_->path()) / "written-by-worker";
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "probe";
  request.pass_args = {{"host-probe.read", secret_.string()},
                       {"host-probe.write", written.string()},
                       {"host-probe.connect", daemon_->socket_path()}};
  auto answer = client().compile(request);
  ASSERT_FALSE(answer);
  const std::string said = everything_said(answer.error());
  EXPECT_EQ(said.find(k_secret), std::string::npos) << said;
  EXPECT_NE(said.find("read " + secret_.string() + ": Permission denied"), std::string::npos) << said;
  EXPECT_NE(said.find("write " + written.string() + ": Permission denied"), std::string::npos) << said;
  EXPECT_NE(said.find("connect " + daemon_->socket_path() + ": socket: Operation not permitted"),
            std::string::npos)
      << said;
  EXPECT_FALSE(fs::exists(written));
}

// Seccomp refuses execve in a general worker (EPERM) before Landlock is
// asked (which would say EACCES): no program runs, tileiras included where
// it is installed, which only Tile IR workers may run.
TEST_F(ConfinementTest, AGeneralWorkerCannotRunAnyProgram) {
  auto status = client().status();
  ASSERT_TRUE(status) << status.error().message;
  std::vector<std::string> programs = {"/bin/true"};
  if (std::optional<std::string> tileiras = tileiras_named_in(status->confinement)) programs.push_back(*tileiras);
  for (const std::string& program : programs) {
    auto answer = client().compile(exec_probe(program));
    ASSERT_FALSE(answer) << program;
    const std::string said = everything_said(answer.error());
    EXPECT_NE(said.find("exec " + program + ": Operation not permitted"), std::string::npos) << said;
  }
  EXPECT_NE(status->confinement.find("general workers (every input but Tile IR) run no program"), std::string::npos)
      << status->confinement;
}

TEST_F(ConfinementTest, AWorkerCannotReadTheDaemonsFilesOrTheSystemsConfiguration) {
  // Beside the daemon's socket, as its configuration and cache would be.
  const fs::path daemons = fs::path(daemon_->socket_path()).parent_path() / "daemon-private.toml";
  std::ofstream(daemons) << k_secret << "\n";
  for (const std::string& path : {daemons.string(), std::string("/etc/passwd")}) {
    auto request = llvm_request(k_llvm_vadd, "cuda:90");
    request.pipeline = "probe";
    request.pass_args = {{"host-probe.read", path}};
    auto answer = client().compile(request);
    ASSERT_FALSE(answer);
    const std::string said = everything_said(answer.error());
    EXPECT_NE(said.find("read " + path + ": Permission denied"), std::string::npos) << said;
    EXPECT_EQ(said.find(k_secret), std::string::npos) << said;
  }
}

TEST_F(ConfinementTest, HealthVerboseSaysHowWorkersAreConfined) {
  ASSERT_TRUE(client().compile(llvm_request(k_llvm_vadd, "cuda:90")));  // a worker has started
  CommandResult r = run_command({kjit_cli_path(), "health", "--verbose", "--socket", daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SERVING"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("confinement: landlock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last worker: Landlock ABI"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("seccomp"), std::string::npos) << r.out;

  auto status = client().status();
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(status->confinement_mode, "landlock");
  EXPECT_GE(status->workers_started, 1u);
  EXPECT_GT(status->last_worker_start_ms, 0.0);
  EXPECT_EQ(status->max_workers, 1u);
}

TEST_F(ConfinementTest, AWorkerThatDiesIsReportedWithItsOwnLastWordsOnly) {
  auto earlier = llvm_request(k_llvm_vadd, "cuda:90");
  earlier.pipeline = "loud";
  earlier.pass_args = {{"loud-pass.note", "EARLIER-REQUEST-PRIVATE"}};
  auto ok = client().compile(earlier);
  ASSERT_TRUE(ok) << ok.error().message;

  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "loud-crash";
  request.pass_args = {{"loud-crash.note", "THIS-REQUEST-LAST-WORDS"}};
  auto crashed = client().compile(request);
  ASSERT_FALSE(crashed);
  const std::string said = everything_said(crashed.error());
  EXPECT_EQ(crashed.error().code, ErrorCode::internal);
  EXPECT_NE(said.find("signal 6"), std::string::npos) << said;
  EXPECT_NE(said.find("loud-crash: THIS-REQUEST-LAST-WORDS"), std::string::npos) << said;
  EXPECT_EQ(said.find("EARLIER-REQUEST-PRIVATE"), std::string::npos) << said;
}

TEST_F(ConfinementTest, LlvmsOwnMessageReachesTheClient) {
  // LLVM 19 cannot select this sm_90 intrinsic for sm_75.
  constexpr const char* k_unselectable = R"(target triple = "nvptx64-nvidia-cuda"
declare void @llvm.nvvm.barrier.cluster.arrive()
define ptx_kernel void @k() {
  call void @llvm.nvvm.barrier.cluster.arrive()
  ret void
}
)";
  auto answer = client().compile(llvm_request(k_unselectable, "cuda:75"));
  ASSERT_FALSE(answer);
  const std::string said = everything_said(answer.error());
  EXPECT_NE(said.find("Cannot select"), std::string::npos) << said;
  EXPECT_NE(said.find("llvm.nvvm.barrier.cluster.arrive"), std::string::npos) << said;
  EXPECT_TRUE(client().compile(llvm_request(k_llvm_vadd, "cuda:90"))) << "the daemon did not go on";
}

// The control for the tests above: the same attacks against an unconfined
// worker do reach the file, so it is the confinement that stops them.
TEST_F(ConfinementTest, WithoutConfinementTheSameAttacksReachTheFile) {
  TestDaemon unconfined(probe_daemon({"--sandbox", "off"}));
  Client client(unconfined.socket_path());
  auto answer = client.compile(injected_include());
  ASSERT_FALSE(answer);
  EXPECT_NE(everything_said(answer.error()).find(k_secret), std::string::npos) << everything_said(answer.error());

  auto probe = llvm_request(k_llvm_vadd, "cuda:90");
  probe.pipeline = "probe";
  probe.pass_args = {{"host-probe.read", secret_.string()}, {"host-probe.exec", "/bin/true"}};
  auto probed = client.compile(probe);
  ASSERT_FALSE(probed);
  EXPECT_NE(everything_said(probed.error()).find("succeeded: #error " + std::string(k_secret)), std::string::npos)
      << everything_said(probed.error());
  EXPECT_NE(everything_said(probed.error()).find("exec /bin/true: succeeded (status 0)"), std::string::npos)
      << everything_said(probed.error());
}

// The other half, where tileiras is installed (found as the daemon finds it,
// or $KJIT_TILEIRAS): a Tile IR job runs in a Tile IR worker, started for it,
// which runs tileiras; a general worker of the same daemon still runs
// nothing, tileiras included.
TEST(WorkerClasses, ATileIrWorkerRunsTileirasAndAGeneralWorkerOfTheSameDaemonCannot) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  DaemonOptions options = probe_daemon();
  options.args.back() = "2";  // --compile-workers: a general worker stays beside the Tile IR one
  if (const char* configured = std::getenv("KJIT_TILEIRAS"); configured && *configured)
    options.args.insert(options.args.end(), {"--tileiras", configured});
  TestDaemon daemon(options);
  Client client(daemon.socket_path());
  auto status = client.status();
  ASSERT_TRUE(status) << status.error().message;
  const std::optional<std::string> tileiras = tileiras_named_in(status->confinement);
  if (!tileiras) GTEST_SKIP() << "no tileiras installed: " << status->confinement;

  std::ifstream file(source_dir() + "/tests/tileir/data/vector_add.tileirbc", std::ios::binary);
  CompileRequest tileir;
  tileir.input_kind = InputKind::tileir;
  tileir.input.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  tileir.input_name = "vector_add.tileirbc";
  tileir.target = "cuda:90";
  ASSERT_FALSE(tileir.input.empty());
  auto compiled = client.compile(tileir);
  ASSERT_TRUE(compiled) << everything_said(compiled.error());
  EXPECT_FALSE(compiled->kernels.empty());

  for (const std::string& program : {std::string("/bin/true"), *tileiras}) {
    auto answer = client.compile(exec_probe(program));
    ASSERT_FALSE(answer) << program;
    const std::string said = everything_said(answer.error());
    EXPECT_NE(said.find("exec " + program + ": Operation not permitted"), std::string::npos) << said;
  }
}

TEST(Confinement, SandboxOffIsAWarningAndSaidInTheStatus) {
  DaemonOptions options{{"--no-cache", "--sandbox", "off", "--compile-workers", "1"}};
  options.capture_log = true;
  TestDaemon daemon(options);
  EXPECT_NE(daemon.log().find("[warning] sandbox = \"off\": compile workers are not confined"), std::string::npos)
      << daemon.log();
  Client client(daemon.socket_path());
  auto status = client.status();
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(status->confinement_mode, "off");
  EXPECT_NE(status->confinement.find("not confined"), std::string::npos) << status->confinement;
}

TEST(Confinement, WithoutLandlockTheDaemonRefusesToStartUnlessSandboxIsOff) {
  const std::string socket = (fs::temp_directory_path() / ("kjit-nolandlock-" + std::to_string(::getpid()))).string();
  CommandResult refused = run_command({KJIT_TEST_WITHOUT_LANDLOCK, kjitd_path(), "--socket", socket + ".sock",
                                       "--no-cache", "--compile-workers", "1"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("cannot confine compile workers (no Landlock"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("sandbox = \"off\""), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(socket + ".sock"));

  // With sandbox = "off" the same host serves, and compiles, unconfined.
  // The shell waits for it to serve as DaemonProcess does: polled, for 30 s
  // at most (a loaded machine may take long to start it).
  const fs::path config = socket + ".toml";
  std::ofstream(config) << "sandbox = \"off\"\ncompile_workers = 1\n";
  CommandResult served = run_command({KJIT_TEST_WITHOUT_LANDLOCK, "/bin/sh", "-c",
                                      kjitd_path() + " --config " + config.string() + " --socket " + socket +
                                          ".sock --no-cache & pid=$!; for i in $(seq 300); do " + kjit_cli_path() +
                                          " health --socket " + socket + ".sock >/dev/null 2>&1 && break; sleep 0.1; "
                                          "done; " + kjit_cli_path() + " health --verbose --socket " + socket +
                                          ".sock; kill $pid; wait $pid"});
  fs::remove(config);
  EXPECT_EQ(served.exit_code, 0) << served.out << served.err;
  EXPECT_NE(served.out.find("confinement: off"), std::string::npos) << served.out;
  EXPECT_NE(served.err.find("not confined"), std::string::npos) << served.err;
}

TEST(Confinement, AnUnknownSandboxModeIsRefusedAtStart) {
  CommandResult r = run_kjitd({}, "sandbox = \"chroot\"\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("sandbox must be"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kjit::test
