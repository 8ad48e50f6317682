// tileiras in a confined worker: the policy a worker gets for it
// (allow_tileiras) lets the assembler read its wheel and run its ptxas, and
// nothing else of the host: a stand-in (fake_tileiras.cpp) in tileiras'
// place tries to read a host file, write beside it and run /bin/sh, through
// run_tool as the pass runs it. Each check confines a forked child, since
// confinement cannot be undone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "backends/tileiras/tileiras.h"
#include "server/workers/worker_confinement.h"
#include "server/workers/worker_sandbox.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

// What a worker's policy holds besides tileiras: the loader's and libc's
// directories (as k_system_read_only), a private directory and /dev/null.
SandboxPolicy base_policy(const fs::path& private_dir) {
  SandboxPolicy policy;
  policy.read_only = {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"};
  policy.read_write = {private_dir.string(), "/dev/null"};
  return policy;
}

// Runs run_tool in a forked child confined by `policy` (or not, when
// `confine` is false); the tool's output, or what went wrong, as text.
std::string run_in_child(const SandboxPolicy& policy, bool confine, const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string text;
    Result<std::string> confined = confine ? confine_this_process(policy) : Result<std::string>(std::string("off"));
    if (!confined) {
      text = "not confined: " + confined.error().message;
    } else {
      Result<ToolRun> run = run_tool(argv, {}, "/", timeout);
      text = run ? "exit " + std::to_string(run->exit_code) + "\n" + run->output
                 : "error " + std::to_string(static_cast<int>(run.error().code)) + ": " + run.error().message;
    }
    (void)!::write(fds[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t got; (got = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    out.append(buffer, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

class TileirasConfinement : public ::testing::Test {
 protected:
  void SetUp() override {
    const SandboxSupport support = probe_sandbox_support();
    if (support.landlock_abi == 0 || !support.seccomp)
      GTEST_SKIP() << "this kernel cannot confine workers: " << support.describe();
    std::string root_template = "/tmp/kjit_tileiras_confinement.XXXXXX";
    ASSERT_NE(::mkdtemp(root_template.data()), nullptr) << std::strerror(errno);
    root_ = fs::canonical(root_template);
    for (const char* dir : {"wheel/bin", "wheel/lib", "host", "private"}) fs::create_directories(root_ / dir);
    for (const char* tool : {"tileiras", "ptxas"}) {
      fs::copy_file(KJIT_FAKE_TILEIRAS, root_ / "wheel/bin" / tool);
      fs::permissions(root_ / "wheel/bin" / tool, fs::perms::owner_all);
    }
    std::ofstream(root_ / "wheel/lib/libnvvm.so.4") << "libnvvm";
    std::ofstream(root_ / "host/shadow") << "root:secret";
    tileiras_.path = (root_ / "wheel/bin/tileiras").string();
    tileiras_.ptxas = (root_ / "wheel/bin/ptxas").string();
    tileiras_.root = (root_ / "wheel").string();
    policy_ = base_policy(root_ / "private");
    allow_tileiras(policy_, tileiras_);
    argv_ = {tileiras_.path, (root_ / "host/shadow").string(), (root_ / "private/out.cubin").string(),
             (root_ / "wheel/lib/libnvvm.so.4").string()};
  }
  void TearDown() override {
    std::error_code ignored;
    if (!root_.empty()) fs::remove_all(root_, ignored);
  }

  fs::path root_;
  TileirasLocation tileiras_;
  SandboxPolicy policy_;
  std::vector<std::string> argv_;
};

const std::string k_denied = std::to_string(EACCES);

TEST_F(TileirasConfinement, UnconfinedTheStandInReachesTheHost) {
  // The control: what the stand-in tries works where nothing confines it.
  const std::string out = run_in_child(policy_, false, argv_, std::chrono::seconds(30));
  EXPECT_NE(out.find("secret: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sh: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("beside secret: 0\n"), std::string::npos) << out;
}

TEST_F(TileirasConfinement, TileirasRunsItsPtxasAndReadsItsWheelOnly) {
  const std::string out = run_in_child(policy_, true, argv_, std::chrono::seconds(30));
  ASSERT_TRUE(out.starts_with("exit 0\n")) << out;
  EXPECT_NE(out.find("library: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("ptxas: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("output: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("secret: " + k_denied + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sh: " + k_denied + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("beside secret: " + k_denied + "\n"), std::string::npos) << out;
}

TEST_F(TileirasConfinement, NothingButTileirasAndPtxasRuns) {
  // The worker itself, under the same policy: the shell, a copy of tileiras
  // it may write, and the wheel's other programs stay shut.
  fs::copy_file(tileiras_.path, root_ / "wheel/bin/nvcc");
  fs::copy_file(tileiras_.path, root_ / "private/tileiras");
  for (const fs::path& program : {fs::path("/bin/sh"), root_ / "wheel/bin/nvcc", root_ / "private/tileiras"}) {
    const std::string out = run_in_child(policy_, true, {program.string(), "hang"}, std::chrono::seconds(30));
    EXPECT_TRUE(out.starts_with("error ")) << program << ": " << out;
    EXPECT_NE(out.find(std::strerror(EACCES)), std::string::npos) << program << ": " << out;
  }
}

TEST_F(TileirasConfinement, ATileirasPastItsTimeBoundIsKilled) {
  const auto start = std::chrono::steady_clock::now();
  const std::string out = run_in_child(policy_, true, {tileiras_.path, "hang"}, std::chrono::milliseconds(300));
  EXPECT_TRUE(out.starts_with("error " + std::to_string(static_cast<int>(ErrorCode::deadline_exceeded))))
      << out;
  EXPECT_NE(out.find("time bound"), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace
}  // namespace kjit
