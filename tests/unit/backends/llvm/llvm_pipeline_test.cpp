// The default LLVM pipeline, in the process, on modules front ends write:
// what it runs, what its key holds, and whose fault its failures are.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/cuda_toolkit.h"
#include "pipeline/cache_key.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {
namespace {

class LlvmPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    toolkit_ = CudaToolkit::load(KJIT_TEST_CUDA_HOME);
    auto created = CompilePipeline::create(toolkit_, {});
    ASSERT_TRUE(created) << created.error().message;
    pipeline_ = *created;
  }
  static void TearDownTestSuite() {
    pipeline_.reset();
    toolkit_.reset();
  }
  void SetUp() override {
    if (!toolkit_->nvjitlink() || toolkit_->libdevice_path().empty())
      GTEST_SKIP() << "no nvJitLink or libdevice under " << KJIT_TEST_CUDA_HOME;
  }

  static CompileJob job(std::string ir, const char* target = "cuda:90") {
    CompileJob job;
    job.input_kind = InputKind::llvm_ir;
    job.input = std::move(ir);
    job.input_name = "kernel.ll";
    job.target = *parse_target(target);
    return job;
  }
  static std::string component(const Artifact& artifact, const std::string& name) {
    for (const KeyComponent& c : artifact.key_components)
      if (c.name == name) return c.value;
    return "<absent>";
  }

  static inline std::shared_ptr<const CudaToolkit> toolkit_;
  static inline std::shared_ptr<const CompilePipeline> pipeline_;
};

// clang --target=nvptx64 style: no OS, libdevice for the math.
constexpr const char* k_sinf_kernel = R"(target triple = "nvptx64-unknown-unknown"
declare float @__nv_sinf(float)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define ptx_kernel void @wave(ptr addrspace(1) %p) {
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %q = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %q
  %r = call float @__nv_sinf(float %v)
  store float %r, ptr addrspace(1) %q
  ret void
}
)";

TEST_F(LlvmPipeline, TheDefaultPipelineLinksLibdeviceAndReflectsBeforeOptimizing) {
  auto pipeline = pipeline_->effective_pipeline(InputKind::llvm_ir, "");
  ASSERT_TRUE(pipeline);
  ASSERT_FALSE(pipeline->stages.empty());
  EXPECT_EQ(pipeline->stages[0].passes, (std::vector<std::string>{"libdevice-link", "nvvm-reflect", "llvm-passes"}));
}

TEST_F(LlvmPipeline, LibdeviceMathCompilesToACubin) {
  auto artifact = pipeline_->run(job(k_sinf_kernel));
  ASSERT_TRUE(artifact) << artifact.error().message << "\n" << artifact.error().log;
  EXPECT_EQ(artifact->kind, ArtifactKind::cubin);
  ASSERT_EQ(artifact->kernels.size(), 1u);
  EXPECT_EQ(artifact->kernels[0].name, "wave");
  auto ptx = job(k_sinf_kernel);
  ptx.wanted = ArtifactKind::ptx;
  auto text = pipeline_->run(ptx);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->bytes.find("__nv_"), std::string::npos) << "libdevice was not inlined";
}

TEST_F(LlvmPipeline, TheKeyHoldsTheTripleAndLibdevicesDigest) {
  auto plan = pipeline_->plan(job(k_sinf_kernel));
  ASSERT_TRUE(plan) << plan.error().message;
  std::ifstream in(toolkit_->libdevice_path(), std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto find = [&](const std::string& name) {
    for (const KeyComponent& c : plan->key.components)
      if (c.name == name) return c.value;
    return std::string("<absent>");
  };
  EXPECT_EQ(find("toolchain.libdevice"), sha256_hex(bytes.str()));
  EXPECT_EQ(find("llvm.triple"), "nvptx64-nvidia-cuda");

  CompileJob cuda;
  cuda.input = "extern \"C\" __global__ void k() {}";
  cuda.target = *parse_target("cuda:90");
  auto cuda_plan = pipeline_->plan(cuda);
  ASSERT_TRUE(cuda_plan);
  for (const KeyComponent& c : cuda_plan->key.components) EXPECT_NE(c.name, "toolchain.libdevice");
}

TEST_F(LlvmPipeline, FtzChangesTheKeyAndTheCode) {
  auto plain = job(k_sinf_kernel);
  plain.wanted = ArtifactKind::ptx;
  auto flushed = plain;
  flushed.options = {"-ftz=true"};
  auto a = pipeline_->run(plain);
  auto b = pipeline_->run(flushed);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->key, b->key);
  EXPECT_EQ(a->bytes.find(".ftz.f32"), std::string::npos);
  EXPECT_NE(b->bytes.find(".ftz.f32"), std::string::npos);
}

TEST_F(LlvmPipeline, AnUndefinedFunctionIsTheInputsFaultAndPtxStillComesBack) {
  std::string ir = k_sinf_kernel;
  ir.replace(ir.find("__nv_sinf"), 9, "my_sinf");
  ir.replace(ir.find("__nv_sinf"), 9, "my_sinf");
  auto failed = pipeline_->run(job(ir));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::invalid_argument) << failed.error().message;
  EXPECT_NE(failed.error().message.find("my_sinf"), std::string::npos) << failed.error().message;
  EXPECT_NE(failed.error().message.find("--ptx"), std::string::npos) << failed.error().message;
  auto ptx = job(ir);
  ptx.wanted = ArtifactKind::ptx;
  EXPECT_TRUE(pipeline_->run(ptx));
}

TEST_F(LlvmPipeline, AFunctionLibdeviceLacksIsTheInputsFault) {
  std::string ir = k_sinf_kernel;
  ir.replace(ir.find("__nv_sinf"), 9, "__nv_sinff");
  ir.replace(ir.find("__nv_sinf("), 9, "__nv_sinff");
  auto failed = pipeline_->run(job(ir));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(failed.error().message.find("__nv_sinff"), std::string::npos) << failed.error().message;
  EXPECT_NE(failed.error().message.find("libdevice"), std::string::npos) << failed.error().message;
}

TEST_F(LlvmPipeline, TooMuchSharedMemoryIsTheInputsFault) {
  constexpr const char* ir = R"(target triple = "nvptx64-nvidia-cuda"
@big = internal addrspace(3) global [100000 x float] undef, align 4
define ptx_kernel void @k(ptr addrspace(1) %p, i32 %i) {
  %s = getelementptr [100000 x float], ptr addrspace(3) @big, i32 0, i32 %i
  store float 1.0, ptr addrspace(3) %s
  %v = load volatile float, ptr addrspace(3) %s
  store float %v, ptr addrspace(1) %p
  ret void
}
)";
  auto failed = pipeline_->run(job(ir));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::invalid_argument) << failed.error().message;
  EXPECT_NE(failed.error().message.find("shared data"), std::string::npos) << failed.error().message;
}

TEST_F(LlvmPipeline, BoundsOfEitherFormReachTheKernelInfo) {
  constexpr const char* attributed = R"(target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr addrspace(1) %p) #0 {
  store float 1.0, ptr addrspace(1) %p
  ret void
}
attributes #0 = { "nvvm.reqntid"="64,2" "nvvm.maxnreg"="40" "nvvm.cluster_dim"="2,1,1" }
)";
  constexpr const char* annotated = R"(target triple = "nvptx64-nvidia-cuda"
define void @k(ptr addrspace(1) %p) {
  store float 1.0, ptr addrspace(1) %p
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1, !"reqntidx", i32 64, !"reqntidy", i32 2, !"maxnreg", i32 40,
       !"cluster_dim_x", i32 2, !"cluster_dim_y", i32 1, !"cluster_dim_z", i32 1}
)";
  for (const char* ir : {attributed, annotated}) {
    auto artifact = pipeline_->run(job(ir));
    ASSERT_TRUE(artifact) << artifact.error().message << "\n" << artifact.error().log;
    ASSERT_EQ(artifact->kernels.size(), 1u);
    const KernelInfo& k = artifact->kernels[0];
    EXPECT_EQ(k.required_threads.x, 64u);
    EXPECT_EQ(k.required_threads.y, 2u);
    EXPECT_EQ(k.required_threads.z, 1u);
    EXPECT_EQ(k.cluster_dims.x, 2u);
    EXPECT_EQ(k.cluster_dims.y, 1u);
    EXPECT_EQ(k.max_registers, 40u);
  }
}

TEST_F(LlvmPipeline, ModulesWithoutKernelsCompile) {
  auto artifact =
      pipeline_->run(job("define float @twice(float %x) {\n  %y = fmul float %x, 2.0\n  ret float %y\n}\n"));
  ASSERT_TRUE(artifact) << artifact.error().message << "\n" << artifact.error().log;
  EXPECT_TRUE(artifact->kernels.empty());
}

}  // namespace
}  // namespace kjit
