// The worker classes' confinement, as a worker applies it
// (worker_sandbox_policy for its class): with tileiras configured (a
// stand-in, fake_tileiras.cpp, so this runs where tileiras is not
// installed), a Tile IR worker may run it and its ptxas, while a general
// worker, background or not, may run nothing, tileiras included: seccomp
// refuses execve (EPERM) before Landlock is asked. Each check confines a
// forked child, since confinement cannot be undone.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "backends/tileiras/tileiras.h"
#include "server/config/pipeline_setup.h"
#include "server/workers/worker_class.h"
#include "server/workers/worker_confinement.h"
#include "server/workers/worker_sandbox.h"
#include "unit/server/workers/fake_tileiras_wheel.h"

namespace kjit {
namespace {

// A worker's own policy for its class, with tileiras configured as the fake
// wheel's (located from the configuration, never run: the stand-in answers
// no --version, and a worker's policy needs none).
class WorkerClassConfinement : public test::FakeTileirasWheel {
 protected:
  void SetUp() override {
    test::FakeTileirasWheel::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    config_.tileiras = tileiras_.path;
    auto pipeline = make_compile_pipeline(config_);
    ASSERT_TRUE(pipeline) << pipeline.error().message;
    pipeline_ = std::move(pipeline.value());
  }
  SandboxPolicy policy_of(const WorkerClass& worker_class) const {
    return worker_sandbox_policy(config_, *pipeline_, (root_ / "private").string(), worker_class);
  }

  DaemonConfig config_;
  std::shared_ptr<const CompilePipeline> pipeline_;
};

TEST_F(WorkerClassConfinement, ATileIrWorkerRunsTileirasAndItsPtxas) {
  for (bool background : {false, true}) {
    const SandboxPolicy policy = policy_of(WorkerClass{true, background});
    EXPECT_EQ(policy.executables, (std::vector<std::string>{config_.tileiras, (root_ / "wheel/bin/ptxas").string()}));
    const std::string out = test::run_in_child(policy, true, argv_, std::chrono::seconds(30));
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
      const std::string out = test::run_in_child(policy, true, {program}, std::chrono::seconds(30));
      EXPECT_TRUE(out.starts_with("error ")) << program << ": " << out;
      EXPECT_NE(out.find(std::strerror(EPERM)), std::string::npos) << program << ": " << out;
    }
  }
}

TEST(WorkerClass, ATileIrJobNeedsATileIrWorkerAndNothingElseDoes) {
  CompileJob job;
  for (InputKind kind :
       {InputKind::cuda_source, InputKind::ptx, InputKind::llvm_ir, InputKind::llvm_bitcode, InputKind::hip_source}) {
    job.input_kind = kind;
    EXPECT_EQ(worker_class_for(job, false), (WorkerClass{false, false}));
    EXPECT_EQ(worker_class_for(job, true), (WorkerClass{false, true}));
  }
  job.input_kind = InputKind::tileir;
  EXPECT_EQ(worker_class_for(job, false), (WorkerClass{true, false}));
  EXPECT_EQ(worker_class_for(job, true), (WorkerClass{true, true}));
  EXPECT_EQ((WorkerClass{true, true}).name(), "tileir background");
  for (size_t index = 0; index < k_worker_class_count; ++index) EXPECT_EQ(WorkerClass::of_index(index).index(), index);
}

}  // namespace
}  // namespace kjit
