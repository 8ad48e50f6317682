// What the tileiras confinement tests share: a fake tileiras wheel in a
// temporary directory (the stand-in fake_tileiras.cpp as tileiras and as
// its ptxas, a libnvvm, a host file it must not read, a private directory),
// and a forked child that confines itself and runs a program there, since
// confinement cannot be undone.
#pragma once

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
#include <vector>

#include "backends/tileiras/tileiras.h"
#include "server/workers/worker_sandbox.h"

namespace kjit::test {

// Runs run_tool in a forked child confined by `policy` (or not, when
// `confine` is false); the tool's output, or what went wrong, as text:
// "exit N\n<output>", "error <code>: <message>" or "not confined: ...".
inline std::string run_in_child(const SandboxPolicy& policy, bool confine, const std::vector<std::string>& argv,
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

// The fake wheel, made for each test and removed after it; skipped where
// the kernel cannot confine workers.
class FakeTileirasWheel : public ::testing::Test {
 protected:
  void SetUp() override {
    const SandboxSupport support = probe_sandbox_support();
    if (support.landlock_abi == 0 || !support.seccomp)
      GTEST_SKIP() << "this kernel cannot confine workers: " << support.describe();
    std::string root_template = "/tmp/kjit_fake_tileiras.XXXXXX";
    ASSERT_NE(::mkdtemp(root_template.data()), nullptr) << std::strerror(errno);
    root_ = std::filesystem::canonical(root_template);
    for (const char* dir : {"wheel/bin", "wheel/lib", "host", "private"})
      std::filesystem::create_directories(root_ / dir);
    for (const char* tool : {"tileiras", "ptxas"}) {
      std::filesystem::copy_file(KJIT_FAKE_TILEIRAS, root_ / "wheel/bin" / tool);
      std::filesystem::permissions(root_ / "wheel/bin" / tool, std::filesystem::perms::owner_all);
    }
    std::ofstream(root_ / "wheel/lib/libnvvm.so.4") << "libnvvm";
    std::ofstream(root_ / "host/shadow") << "root:secret";
    tileiras_.path = (root_ / "wheel/bin/tileiras").string();
    tileiras_.ptxas = (root_ / "wheel/bin/ptxas").string();
    tileiras_.root = (root_ / "wheel").string();
    // The stand-in reads its first argument, writes its second and loads its third.
    argv_ = {tileiras_.path, (root_ / "host/shadow").string(), (root_ / "private/out.cubin").string(),
             (root_ / "wheel/lib/libnvvm.so.4").string()};
  }
  void TearDown() override {
    std::error_code ignored;
    if (!root_.empty()) std::filesystem::remove_all(root_, ignored);
  }

  std::filesystem::path root_;
  TileirasLocation tileiras_;
  std::vector<std::string> argv_;
};

}  // namespace kjit::test
