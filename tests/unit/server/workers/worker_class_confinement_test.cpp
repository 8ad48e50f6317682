// The worker classes' confinement, as a worker applies it
// (worker_sandbox_policy for its class): with tileiras configured (a
// stand-in, fake_tileiras.cpp, so this runs where tileiras is not
// installed), a Tile IR worker may run it and its ptxas, while a general
// worker, background or not, may run nothing, tileiras included: seccomp
// refuses execve (EPERM) before Landlock is asked. Each check confines a
// forked child, since confinement cannot be undone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "backends/tileiras/tileiras.h"
#include "server/config/pipeline_setup.h"
#include "server/workers/worker_class.h"
#include "server/workers/worker_confinement.h"
#include "server/workers/worker_sandbox.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

// Confines a forked child with `policy` and runs `argv` there (run_tool, as
// the tileiras pass runs it); what happened, as text.
std::string run_confined(const SandboxPolicy& policy, const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string text;
    if (Result<std::string> confined = confine_this_process(policy); !confined) {
      text = "not confined: " + confined.error().message;
    } else {
      Result<ToolRun> run = run_tool(argv, {}, "/", std::chrono::seconds(30));
      text = run ? "exit " + std::to_string(run->exit_code) + "\n" + run->output : "error: " + run.error().message;
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

class WorkerClassConfinement : public ::testing::Test {
 protected:
  void SetUp() override {
    const SandboxSupport support = probe_sandbox_support();
    if (support.landlock_abi == 0 || !support.seccomp)
      GTEST_SKIP() << "this kernel cannot confine workers: " << support.describe();
    std::string root_template = "/tmp/kjit_worker_class.XXXXXX";
    ASSERT_NE(::mkdtemp(root_template.data()), nullptr) << std::strerror(errno);
    root_ = fs::canonical(root_template);
    for (const char* dir : {"wheel/bin", "wheel/lib", "host", "private"}) fs::create_directories(root_ / dir);
    for (const char* tool : {"tileiras", "ptxas"}) {
      fs::copy_file(KJIT_FAKE_TILEIRAS, root_ / "wheel/bin" / tool);
      fs::permissions(root_ / "wheel/bin" / tool, fs::perms::owner_all);
    }
    std::ofstream(root_ / "wheel/lib/libnvvm.so.4") << "libnvvm";
    std::ofstream(root_ / "host/shadow") << "root:secret";
    // Located from the configuration, never run: the stand-in answers no
    // --version, and a worker's policy needs none.
    config_.tileiras = (root_ / "wheel/bin/tileiras").string();
    auto pipeline = make_compile_pipeline(config_);
    ASSERT_TRUE(pipeline) << pipeline.error().message;
    pipeline_ = std::move(pipeline.value());
    argv_ = {config_.tileiras, (root_ / "host/shadow").string(), (root_ / "private/out.cubin").string(),
             (root_ / "wheel/lib/libnvvm.so.4").string()};
  }
  void TearDown() override {
    std::error_code ignored;
    if (!root_.empty()) fs::remove_all(root_, ignored);
  }
  SandboxPolicy policy_of(const WorkerClass& worker_class) const {
    return worker_sandbox_policy(config_, *pipeline_, (root_ / "private").string(), worker_class);
  }

  fs::path root_;
  DaemonConfig config_;
  std::shared_ptr<const CompilePipeline> pipeline_;
  std::vector<std::string> argv_;
};

TEST_F(WorkerClassConfinement, ATileIrWorkerRunsTileirasAndItsPtxas) {
  for (bool background : {false, true}) {
    const SandboxPolicy policy = policy_of(WorkerClass{true, background});
    EXPECT_EQ(policy.executables, (std::vector<std::string>{config_.tileiras, (root_ / "wheel/bin/ptxas").string()}));
    const std::string out = run_confined(policy, argv_);
    ASSERT_TRUE(out.starts_with("exit 0\n")) << out;
    EXPECT_NE(out.find("ptxas: 0\n"), std::string::npos) << out;
    EXPECT_NE(out.find("sh: " + std::to_string(EACCES) + "\n"), std::string::npos) << out;
  }
}

TEST_F(WorkerClassConfinement, AGeneralWorkerRunsNoProgramNotEvenTileiras) {
  for (bool background : {false, true}) {
    const SandboxPolicy policy = policy_of(WorkerClass{false, background});
    EXPECT_TRUE(policy.executables.empty());
    for (const std::string& program : {config_.tileiras, std::string("/bin/true")}) {
      const std::string out = run_confined(policy, {program});
      EXPECT_TRUE(out.starts_with("error: ")) << program << ": " << out;
      EXPECT_NE(out.find(std::strerror(EPERM)), std::string::npos) << program << ": " << out;
    }
  }
}

TEST(WorkerClass, ATileIrJobNeedsATileIrWorkerAndNothingElseDoes) {
  CompileJob job;
  for (InputKind kind : {InputKind::cuda_source, InputKind::ptx, InputKind::llvm_ir, InputKind::llvm_bitcode,
                         InputKind::hip_source}) {
    job.input_kind = kind;
    EXPECT_EQ(worker_class_for(job, false), (WorkerClass{false, false}));
    EXPECT_EQ(worker_class_for(job, true), (WorkerClass{false, true}));
  }
  job.input_kind = InputKind::tileir;
  EXPECT_EQ(worker_class_for(job, false), (WorkerClass{true, false}));
  EXPECT_EQ(worker_class_for(job, true), (WorkerClass{true, true}));
  EXPECT_EQ((WorkerClass{true, true}).name(), "tileir background");
  for (size_t index = 0; index < k_worker_class_count; ++index)
    EXPECT_EQ(WorkerClass::of_index(index).index(), index);
}

}  // namespace
}  // namespace kjit
