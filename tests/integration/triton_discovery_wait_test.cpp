// Calls that wait for the Triton builds' discovery (at their first use,
// seconds on a loaded machine) keep their connections: they wait on kjitd's
// blocking pool, never on gRPC's own threads. With those all waiting, nothing
// answered the connections' pings, and gRPC dropped every waiting call once
// kjitd's keepalive gave up on its ping (10 s, then 5 s for the answer):
// two clients' first Triton compiles on a fresh daemon both failed after
// 15 s. Here the discovery is made that slow by a build whose interpreter
// sleeps 17 s before it fails to describe itself, without using the CPU.
// And a daemon stopped while it discovers leaves no interpreter running on.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "server/daemon/leftover_directories.h"
#include "support/child_process.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* k_ttir = R"(module {
  tt.func public @waits(%p: !tt.ptr<f32>) {
    %c = arith.constant 1.0 : f32
    tt.store %p, %c : !tt.ptr<f32>
    tt.return
  }
}
)";

TEST(TritonDiscoveryWait, CallsWaitingForTheBuildsKeepTheirConnectionsAndHealthAnswers) {
  TempDir temp;
  const std::string slow_python = temp.path() + "/slow-python";
  std::ofstream(slow_python) << "#!/bin/sh\nsleep 17\nexit 1\n";
  fs::permissions(slow_python, fs::perms::owner_all);
  DaemonOptions options;
  options.triton_builds = false;  // the slow build alone
  options.config = "[triton]\nbuilds = [\"" + slow_python + "\"]\n";
  TestDaemon daemon(std::move(options));
  ASSERT_TRUE(daemon.status()) << daemon.status().error().message;

  // More waiting calls than gRPC has callback threads on a small machine
  // (one per core): two listings and two Triton compiles.
  const auto began = Clock::now();
  std::vector<std::future<Result<ToolkitListing>>> listings;
  std::vector<std::future<Result<CompileResult>>> compiles;
  for (int i = 0; i < 2; ++i) {
    listings.push_back(std::async(std::launch::async, [&] { return Client(daemon.socket_path()).toolkits(); }));
    compiles.push_back(std::async(std::launch::async, [&, i] {
      CompileRequest request;
      request.input = std::string(k_ttir) + "// " + std::to_string(i) + "\n";
      request.input_name = "waits.ttir";
      request.input_kind = InputKind::triton;
      request.target = "cuda:90";
      return Client(daemon.socket_path()).compile(request);
    }));
  }
  // Meanwhile the daemon answers at once.
  Result<std::string> health = Client(daemon.socket_path(), {5s}).health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ(*health, "SERVING");

  for (auto& listing : listings) {
    Result<ToolkitListing> answer = listing.get();
    ASSERT_TRUE(answer) << answer.error().message;
    ASSERT_EQ(answer->triton.size(), 1u);
    EXPECT_NE(answer->triton[0].error.find("slow-python"), std::string::npos) << answer->triton[0].error;
  }
  for (auto& compile : compiles) {
    Result<CompileResult> answer = compile.get();
    ASSERT_FALSE(answer);
    // No build to compile with: the daemon's answer, not a dropped connection.
    EXPECT_EQ(answer.error().code, ErrorCode::failed_precondition) << answer.error().message;
  }
  // The calls did wait for the slow discovery, past the point where the
  // connections used to be dropped.
  EXPECT_GE(Clock::now() - began, 16s);
}

TEST(TritonDiscoveryWait, ADaemonStoppedWhileItDiscoversLeavesNoInterpreterRunning) {
  // The build's interpreter tells its pid and then waits a minute (exec
  // keeps the pid): discovery is still asking it when the daemon stops.
  TempDir temp;
  const std::string pid_file = temp.path() + "/interpreter.pid";
  const std::string waiting_python = temp.path() + "/waiting-python";
  std::ofstream(waiting_python) << "#!/bin/sh\necho $$ > " << pid_file << ".tmp\nmv " << pid_file << ".tmp "
                                << pid_file << "\nexec sleep 60\n";
  fs::permissions(waiting_python, fs::perms::owner_all);
  DaemonOptions options;
  options.triton_builds = false;
  options.triton_prestart = true;  // discovery at start, no request needed
  options.config = "[triton]\nbuilds = [\"" + waiting_python + "\"]\n";
  TestDaemon daemon(std::move(options));
  ASSERT_TRUE(daemon.status()) << daemon.status().error().message;

  ASSERT_TRUE(eventually([&] { return fs::exists(pid_file); })) << "discovery never started the interpreter";
  const pid_t interpreter = std::stoi(read_file(pid_file));
  ASSERT_EQ(owner_process(interpreter).state, OwnerProcess::State::running);
  EXPECT_EQ(daemon.stop(), 0);
  // Gone (or a zombie nobody reaped yet), not sleeping on as an orphan.
  EXPECT_TRUE(eventually([&] { return owner_process(interpreter).state != OwnerProcess::State::running; }))
      << "the interpreter " << interpreter << " outlived the daemon";
  ::kill(interpreter, SIGKILL);  // whatever the outcome, nothing left behind
}

}  // namespace
}  // namespace kjit::test
