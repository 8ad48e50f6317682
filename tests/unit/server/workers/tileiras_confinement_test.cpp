// tileiras in a confined worker: the policy a worker gets for it
// (allow_tileiras) lets the assembler read its wheel and run its ptxas, and
// nothing else of the host: a stand-in (fake_tileiras.cpp) in tileiras'
// place tries to read a host file, write beside it and run /bin/sh, through
// run_tool as the pass runs it. Each check confines a forked child, since
// confinement cannot be undone.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "backends/tileiras/tileiras.h"
#include "server/workers/worker_confinement.h"
#include "server/workers/worker_sandbox.h"
#include "unit/server/workers/fake_tileiras_wheel.h"

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

class TileirasConfinement : public test::FakeTileirasWheel {
 protected:
  void SetUp() override {
    test::FakeTileirasWheel::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    policy_ = base_policy(root_ / "private");
    allow_tileiras(policy_, tileiras_);
  }

  SandboxPolicy policy_;
};

const std::string k_denied = std::to_string(EACCES);

TEST_F(TileirasConfinement, UnconfinedTheStandInReachesTheHost) {
  // The control: what the stand-in tries works where nothing confines it.
  const std::string out = test::run_in_child(policy_, false, argv_, std::chrono::seconds(30));
  EXPECT_NE(out.find("secret: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sh: 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("beside secret: 0\n"), std::string::npos) << out;
}

TEST_F(TileirasConfinement, TileirasRunsItsPtxasAndReadsItsWheelOnly) {
  const std::string out = test::run_in_child(policy_, true, argv_, std::chrono::seconds(30));
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
    const std::string out = test::run_in_child(policy_, true, {program.string(), "hang"}, std::chrono::seconds(30));
    EXPECT_TRUE(out.starts_with("error ")) << program << ": " << out;
    EXPECT_NE(out.find(std::strerror(EACCES)), std::string::npos) << program << ": " << out;
  }
}

TEST_F(TileirasConfinement, ATileirasPastItsTimeBoundIsKilled) {
  const auto start = std::chrono::steady_clock::now();
  const std::string out = test::run_in_child(policy_, true, {tileiras_.path, "hang"}, std::chrono::milliseconds(300));
  EXPECT_TRUE(out.starts_with("error " + std::to_string(static_cast<int>(ErrorCode::deadline_exceeded)))) << out;
  EXPECT_NE(out.find("time bound"), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace
}  // namespace kjit
