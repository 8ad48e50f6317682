// Compile requests that should succeed, through a real kjitd and the client.
#include <gtest/gtest.h>

#include <future>

#include "kjit/client.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/elf_header.h"

namespace kjit::test {
namespace {

class CompileTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() { start_daemon(); }

  static Result<CompileResult> compile(const char* source, const std::string& target,
                                       std::vector<std::string> name_expressions = {},
                                       ArtifactKind artifact = ArtifactKind::cubin) {
    CompileRequest request;
    request.input = source;
    request.input_name = "test.cu";
    request.target = target;
    request.name_expressions = std::move(name_expressions);
    request.artifact = artifact;
    return client().compile(request);
  }

  static const KernelInfo* kernel_named(const CompileResult& result, const std::string& name) {
    for (const KernelInfo& k : result.kernels)
      if (k.name == name) return &k;
    return nullptr;
  }
};

class VectorAddPerTarget : public CompileTest, public ::testing::WithParamInterface<std::pair<std::string, uint32_t>> {};

TEST_P(VectorAddPerTarget, CompilesToCubinWhoseElfSmMatchesTheTarget) {
  auto [target, sm] = GetParam();
  auto result = compile(k_vector_add, target);
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_EQ(result->artifact_kind, ArtifactKind::cubin);
  EXPECT_EQ(result->target, target);
  ElfHeader elf = elf_header_of(result->artifact);
  ASSERT_TRUE(elf.is_elf64);
  EXPECT_EQ(elf.machine, 190);  // EM_CUDA
  EXPECT_EQ(elf.sm, sm);
  const KernelInfo* kernel = kernel_named(*result, "vector_add");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->lowered_name, "vector_add");
  EXPECT_GT(kernel->registers, 0u);
  ASSERT_GE(result->timings.size(), 2u);
  EXPECT_EQ(result->timings[0].stage, "nvrtc");
  EXPECT_EQ(result->timings[1].stage, "nvjitlink");
}

INSTANTIATE_TEST_SUITE_P(Targets, VectorAddPerTarget,
                         ::testing::Values(std::make_pair(std::string("cuda:90"), 90u),
                                           std::make_pair(std::string("cuda:100"), 100u),
                                           std::make_pair(std::string("cuda:75"), 75u),
                                           std::make_pair(std::string("cuda:120"), 120u)));

class TemplatePerTarget : public CompileTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(TemplatePerTarget, NameExpressionsGiveLoweredNamesAndKernels) {
  auto result = compile(k_templated, GetParam(), {"scale<float>", "scale<double>"});
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  ASSERT_EQ(result->lowered_names.size(), 2u);
  EXPECT_TRUE(result->lowered_names.at("scale<float>").starts_with("_Z5scaleIfEv"));
  EXPECT_TRUE(result->lowered_names.at("scale<double>").starts_with("_Z5scaleIdEv"));
  const KernelInfo* f = kernel_named(*result, "scale<float>");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->lowered_name, result->lowered_names.at("scale<float>"));
  const KernelInfo* d = kernel_named(*result, "scale<double>");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->lowered_name, result->lowered_names.at("scale<double>"));
}

INSTANTIATE_TEST_SUITE_P(Targets, TemplatePerTarget, ::testing::Values("cuda:90", "cuda:100"));

TEST_F(CompileTest, LaunchBoundsReadBackAsMaxThreads256) {
  auto result = compile(k_launch_bounds, "cuda:90");
  ASSERT_TRUE(result) << result.error().message;
  const KernelInfo* kernel = kernel_named(*result, "bounded");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->max_threads_per_block, 256u);
}

TEST_F(CompileTest, SixteenKiBSharedArrayReadsBackAsStaticSharedMemory) {
  for (std::string target : {"cuda:89", "cuda:90", "cuda:100"}) {
    auto result = compile(k_shared_16k, target);
    ASSERT_TRUE(result) << result.error().message;
    const KernelInfo* kernel = kernel_named(*result, "tiled");
    ASSERT_NE(kernel, nullptr);
    EXPECT_GE(kernel->static_shared_bytes, 16384u) << target;
    EXPECT_GE(kernel->shared_section_bytes, kernel->static_shared_bytes) << target;
  }
}

TEST_F(CompileTest, ToolkitHeadersNeedNoOption) {
  auto result = compile(k_toolkit_headers, "cuda:90");
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_NE(kernel_named(*result, "halves"), nullptr);
}

TEST_F(CompileTest, HeadersSentInTheRequestAreIncluded) {
  CompileRequest request;
  request.input = "#include \"ops/add.h\"\nextern \"C\" __global__ void k(float* x) { x[0] = add_one(x[0]); }\n";
  request.headers["ops/add.h"] = "__device__ inline float add_one(float v) { return v + OFFSET; }\n";
  request.options = {"-DOFFSET=1.0f"};
  request.target = "cuda:90";
  auto result = client().compile(request);
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_NE(kernel_named(*result, "k"), nullptr);
}

TEST_F(CompileTest, PtxArtifactRoundTripsAsPtxInput) {
  auto ptx = compile(k_vector_add, "cuda:90", {}, ArtifactKind::ptx);
  ASSERT_TRUE(ptx) << ptx.error().message;
  EXPECT_EQ(ptx->artifact_kind, ArtifactKind::ptx);
  EXPECT_NE(ptx->artifact.find(".entry vector_add"), std::string::npos);

  CompileRequest request;
  request.input_kind = InputKind::ptx;
  request.input = ptx->artifact;
  request.target = "cuda:90";
  auto cubin = client().compile(request);
  ASSERT_TRUE(cubin) << cubin.error().message << "\n" << cubin.error().log;
  EXPECT_EQ(elf_header_of(cubin->artifact).sm, 90u);
  ASSERT_EQ(cubin->timings.size(), 2u);  // nvjitlink, metadata
  EXPECT_EQ(cubin->timings[0].stage, "nvjitlink");
  EXPECT_NE(kernel_named(*cubin, "vector_add"), nullptr);
}

TEST_F(CompileTest, ConcurrentRequestsAllSucceed) {
  std::vector<std::future<bool>> results;
  for (int i = 0; i < 8; ++i) {
    results.push_back(std::async(std::launch::async, [i] {
      std::string source = std::string(k_vector_add) + "\n// variant " + std::to_string(i) + "\n";
      auto r = compile(source.c_str(), i % 2 ? "cuda:90" : "cuda:100");
      return r && !r->kernels.empty();
    }));
  }
  for (auto& r : results) EXPECT_TRUE(r.get());
}

}  // namespace
}  // namespace kjit::test
