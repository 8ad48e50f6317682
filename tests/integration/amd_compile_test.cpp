// AMD targets through a real kjitd: HIP source with HIPRTC, LLVM IR with
// LLVM's AMDGPU back end and lld, code objects read back, code-object
// bundles for several targets, HIP launch plans and the CLI. The HIPRTC
// tests skip, saying so, on a host without HIPRTC (scripts/install-deps.sh
// installs Debian's).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/bundle/offload_bundle.h"
#include "backends/hiprtc/hiprtc_api.h"
#include "kjit/client.h"
#include "support/amd_kernels.h"
#include "support/daemon_test.h"
#include "support/elf_header.h"
#include "support/fails_with.h"
#include "temp_dir.h"
#include "test_plugins.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

constexpr uint16_t k_em_amdgpu = 224;

class AmdCompileTest : public SharedDaemonTest {
 protected:
  static void SetUpTestSuite() { start_daemon(); }

  static CompileRequest hip(const std::string& target, std::string source = k_hip_kernel) {
    CompileRequest r;
    r.input_kind = InputKind::hip_source;
    r.input = std::move(source);
    r.input_name = "tile.hip";
    r.target = target;
    return r;
  }
  static CompileRequest ir(const std::string& target, std::string source = k_amdgpu_ir) {
    CompileRequest r;
    r.input_kind = InputKind::llvm_ir;
    r.input = std::move(source);
    r.input_name = "tile.ll";
    r.target = target;
    return r;
  }
  static const KernelInfo* kernel(const CompileResult& result, const std::string& name) {
    for (const KernelInfo& k : result.kernels)
      if (k.name == name || k.lowered_name == name) return &k;
    return nullptr;
  }
  // The code object is an AMDGPU ELF whose metadata names the target.
  static void expect_code_object(const CompileResult& result, const std::string& processor) {
    EXPECT_EQ(result.artifact_kind, ArtifactKind::hsaco);
    EXPECT_EQ(result.target, "hip:" + processor);
    ElfHeader header = elf_header_of(result.artifact);
    EXPECT_TRUE(header.is_elf64);
    EXPECT_EQ(header.machine, k_em_amdgpu);
    bool named = false;
    for (const std::string& note : result.notes) named |= note.find("amdgcn-amd-amdhsa--" + processor) != std::string::npos;
    EXPECT_TRUE(named) << "no note names amdgcn-amd-amdhsa--" << processor;
  }
};

#define SKIP_WITHOUT_HIPRTC() \
  if (!find_hiprtc()) GTEST_SKIP() << "no HIPRTC on this host (scripts/install-deps.sh installs libamdhip64-dev)"

TEST_F(AmdCompileTest, HipSourceForGfx90aThroughHiprtcSaysItsLdsAndLaunchBounds) {
  SKIP_WITHOUT_HIPRTC();
  Result<CompileResult> result = client().compile(hip("hip:gfx90a"));
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  expect_code_object(*result, "gfx90a");
  EXPECT_EQ(result->pipeline, "hip-amdgpu");
  EXPECT_NE(result->toolkit.find("HIPRTC"), std::string::npos) << result->toolkit;
  const KernelInfo* k = kernel(*result, "tile_sum");
  ASSERT_NE(k, nullptr);
  EXPECT_GE(k->static_shared_bytes, 32768u);
  EXPECT_EQ(k->max_threads_per_block, 256u);
  EXPECT_EQ(k->wavefront_size, 64u);
  EXPECT_GT(k->registers, 0u);
  EXPECT_GT(k->scalar_registers, 0u);
  EXPECT_EQ(k->param_bytes >= 16, true);
  bool hiprtc_key = false;
  for (const KeyComponent& c : result->key_components) hiprtc_key |= c.name == "toolchain.hiprtc";
  EXPECT_TRUE(hiprtc_key) << "the key does not name HIPRTC's version";

  Result<CompileResult> again = client().compile(hip("hip:gfx90a"));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->cache, "memory");
  EXPECT_EQ(again->artifact, result->artifact);
}

TEST_F(AmdCompileTest, LlvmIrBuildsForGfx90aGfx942AndGfx1100) {
  std::string previous_key;
  for (const auto& [processor, wavefront] :
       std::vector<std::pair<std::string, uint32_t>>{{"gfx90a", 64}, {"gfx942", 64}, {"gfx1100", 32}}) {
    SCOPED_TRACE(processor);
    Result<CompileResult> result = client().compile(ir("hip:" + processor));
    ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
    expect_code_object(*result, processor);
    EXPECT_EQ(result->pipeline, "llvm-amdgpu");
    const KernelInfo* k = kernel(*result, "tile_swap");
    ASSERT_NE(k, nullptr);
    EXPECT_GE(k->static_shared_bytes, 32768u);
    EXPECT_EQ(k->max_threads_per_block, 256u);
    EXPECT_EQ(k->wavefront_size, wavefront);
    EXPECT_EQ(k->param_bytes >= 16, true);
    const KernelInfo* plain = kernel(*result, "scale");
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(plain->static_shared_bytes, 0u);
    EXPECT_NE(result->key, previous_key);
    previous_key = result->key;
  }
}

TEST_F(AmdCompileTest, HipSourceAndLlvmIrBothBuildGfx90a) {
  SKIP_WITHOUT_HIPRTC();
  Result<CompileResult> from_hip = client().compile(hip("hip:gfx90a"));
  Result<CompileResult> from_ir = client().compile(ir("hip:gfx90a"));
  ASSERT_TRUE(from_hip) << from_hip.error().message;
  ASSERT_TRUE(from_ir) << from_ir.error().message;
  EXPECT_NE(from_hip->key, from_ir->key);
  EXPECT_EQ(from_hip->artifact_kind, from_ir->artifact_kind);
}

TEST_F(AmdCompileTest, CodeObjectVersionIsARequestOption) {
  CompileRequest v4 = ir("hip:gfx942");
  v4.options = {"-mcode-object-version=4"};
  Result<CompileResult> older = client().compile(v4);
  Result<CompileResult> standard = client().compile(ir("hip:gfx942"));
  ASSERT_TRUE(older) << older.error().message;
  ASSERT_TRUE(standard) << standard.error().message;
  // e_ident[EI_ABIVERSION]: 2 for code object v4, 3 for v5.
  EXPECT_EQ(static_cast<uint8_t>(older->artifact[8]), 2);
  EXPECT_EQ(static_cast<uint8_t>(standard->artifact[8]), 3);
  EXPECT_NE(older->key, standard->key);
  CompileRequest bad = ir("hip:gfx942");
  bad.options = {"-mcode-object-version=3"};
  EXPECT_TRUE(fails_with(client().compile(bad), ErrorCode::invalid_argument, "code object version"));
}

TEST_F(AmdCompileTest, HipForATargetHiprtcWouldAbortOnIsRefusedAndTheDaemonServesOn) {
  SKIP_WITHOUT_HIPRTC();
  Result<CompileResult> refused = client().compile(hip("hip:gfx942"));
  ASSERT_TRUE(fails_with(refused, ErrorCode::invalid_argument, "not supported by the installed HIPRTC"));
  EXPECT_NE(refused.error().message.find("hip:gfx90a"), std::string::npos) << refused.error().message;
  Result<CompileResult> refused_rdna3 = client().compile(hip("hip:gfx1100"));
  EXPECT_TRUE(fails_with(refused_rdna3, ErrorCode::invalid_argument, "not supported by the installed HIPRTC"));
  EXPECT_TRUE(client().health());
  Result<CompileResult> served = client().compile(hip("hip:gfx908"));
  EXPECT_TRUE(served) << served.error().message;
}

TEST_F(AmdCompileTest, AMalformedHipKernelGetsTheCompilersLog) {
  SKIP_WITHOUT_HIPRTC();
  Result<CompileResult> result =
      client().compile(hip("hip:gfx90a", "extern \"C\" __global__ void k(float* x) { x[0] = undeclared_thing; }\n"));
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument));
  const std::string said = result.error().message + result.error().log;
  EXPECT_NE(said.find("undeclared_thing"), std::string::npos) << said;
}

TEST_F(AmdCompileTest, MalformedLlvmIrGetsLlvmsMessage) {
  Result<CompileResult> result = client().compile(ir("hip:gfx90a", "define amdgpu_kernel void @k( {\n"));
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument));
  EXPECT_NE((result.error().message + result.error().log).find("tile.ll"), std::string::npos)
      << result.error().message;
}

TEST_F(AmdCompileTest, InputsAndTargetsOfTheOtherVendorAreRefused) {
  CompileRequest cuda;
  cuda.input_kind = InputKind::cuda_source;
  cuda.input = "extern \"C\" __global__ void k() {}";
  cuda.target = "hip:gfx90a";
  EXPECT_TRUE(fails_with(client().compile(cuda), ErrorCode::invalid_argument, "NVIDIA"));
  EXPECT_TRUE(fails_with(client().compile(hip("cuda:90")), ErrorCode::invalid_argument, "AMD"));
  CompileRequest named = ir("hip:gfx90a");
  named.pipeline = "llvm-nvidia";
  EXPECT_TRUE(fails_with(client().compile(named), ErrorCode::invalid_argument, "builds for NVIDIA"));
  CompileRequest wrong_kind = ir("hip:gfx90a");
  wrong_kind.artifact = ArtifactKind::ptx;
  EXPECT_TRUE(fails_with(client().compile(wrong_kind), ErrorCode::invalid_argument, "HSACO"));
  EXPECT_TRUE(fails_with(client().compile(ir("hip:gfx9999")), ErrorCode::invalid_argument, "known AMD targets"));
  // gfx950 is a target for Triton IR only: LLVM 19 does not know it.
  EXPECT_TRUE(fails_with(client().compile(ir("hip:gfx950")), ErrorCode::failed_precondition, "Triton IR only"));
  CompileRequest option = ir("hip:gfx90a");
  option.options = {"-lineinfo"};
  EXPECT_TRUE(fails_with(client().compile(option), ErrorCode::invalid_argument, "-lineinfo"));
}

TEST_F(AmdCompileTest, SeveralHipTargetsGiveACodeObjectBundleTheHipRuntimeReads) {
  CompileRequest request = ir("");
  request.target.clear();
  request.targets = {"hip:gfx90a", "hip:gfx1100"};
  Result<CompileResult> result = client().compile(request);
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_EQ(result->artifact_kind, ArtifactKind::hip_bundle);
  ASSERT_EQ(result->entries.size(), 2u);
  Result<std::vector<BundleEntry>> entries = read_offload_bundle(result->artifact);
  ASSERT_TRUE(entries) << entries.error().message;
  std::vector<std::string> ids;
  for (const BundleEntry& entry : *entries) {
    ids.push_back(entry.id);
    if (entry.id.starts_with("hipv4-")) {
      EXPECT_EQ(elf_header_of(entry.bytes).machine, k_em_amdgpu) << entry.id;
    }
  }
  EXPECT_NE(std::find(ids.begin(), ids.end(), "hipv4-amdgcn-amd-amdhsa--gfx90a"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "hipv4-amdgcn-amd-amdhsa--gfx1100"), ids.end());
  // Each part is cached on its own: a single-target request is a hit.
  Result<CompileResult> single = client().compile(ir("hip:gfx1100"));
  ASSERT_TRUE(single) << single.error().message;
  EXPECT_EQ(single->cache, "memory");
  request.targets = {"hip:gfx90a", "cuda:90"};
  EXPECT_TRUE(fails_with(client().compile(request), ErrorCode::invalid_argument, "two vendors"));
}

TEST_F(AmdCompileTest, PipelineShowPicksTheAmdPipelinesByTarget) {
  Result<PipelineDescription> hip_pipeline = client().describe_pipeline(InputKind::hip_source, "hip:gfx90a", "");
  ASSERT_TRUE(hip_pipeline) << hip_pipeline.error().message;
  EXPECT_EQ(hip_pipeline->name, "hip-amdgpu");
  EXPECT_NE(hip_pipeline->toml.find("hiprtc-compile"), std::string::npos) << hip_pipeline->toml;
  Result<PipelineDescription> llvm_pipeline = client().describe_pipeline(InputKind::llvm_ir, "hip:gfx942", "");
  ASSERT_TRUE(llvm_pipeline) << llvm_pipeline.error().message;
  EXPECT_EQ(llvm_pipeline->name, "llvm-amdgpu");
  for (const char* pass : {"llvm-passes", "amdgpu-codegen", "lld-link"})
    EXPECT_NE(llvm_pipeline->toml.find(pass), std::string::npos) << pass;
  // Without a target: the vendor whose pipelines take the input.
  Result<PipelineDescription> untargeted = client().describe_pipeline(InputKind::hip_source, "", "");
  ASSERT_TRUE(untargeted) << untargeted.error().message;
  EXPECT_EQ(untargeted->name, "hip-amdgpu");
  Result<PipelineDescription> nvidia = client().describe_pipeline(InputKind::llvm_ir, "cuda:90", "");
  ASSERT_TRUE(nvidia) << nvidia.error().message;
  EXPECT_EQ(nvidia->name, "llvm-nvidia");
  EXPECT_TRUE(fails_with(client().describe_pipeline(InputKind::hip_source, "cuda:90", ""), ErrorCode::invalid_argument,
                         "AMD"));
}

TEST_F(AmdCompileTest, PlanForAHipTargetNamesHipAttributesAndLdsLimits) {
  KernelRef ref;
  ref.compile = ir("hip:gfx90a");
  ref.kernel = "scale";
  LaunchConfig config;
  config.grid = {64, 1, 1};
  config.block = {256, 1, 1};
  config.dynamic_shared_bytes = 60000;
  Result<PlannedLaunch> plan = client().plan_launch(ref, config);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->target, "gfx90a");
  ASSERT_EQ(plan->function_attributes.size(), 1u);
  EXPECT_EQ(plan->function_attributes[0].name, "hipFuncAttributeMaxDynamicSharedMemorySize");
  EXPECT_EQ(plan->function_attributes[0].values.at(0), 60000);

  config.dynamic_shared_bytes = 1024;
  plan = client().plan_launch(ref, config);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->function_attributes.empty());

  ref.kernel = "tile_swap";
  config.dynamic_shared_bytes = 40000;  // 32 KiB static + 40000 > 64 KiB
  EXPECT_TRUE(fails_with(client().plan_launch(ref, config), ErrorCode::invalid_argument,
                         "out of resource: LDS: requires 72768 bytes, limit 65536 on gfx90a"));
  config.dynamic_shared_bytes = 0;
  config.block = {512, 1, 1};
  EXPECT_TRUE(fails_with(client().plan_launch(ref, config), ErrorCode::invalid_argument, "max flat workgroup size of 256"));
  config.block = {256, 1, 1};
  config.cluster = {2, 1, 1};
  EXPECT_TRUE(fails_with(client().plan_launch(ref, config), ErrorCode::invalid_argument, "clusters"));
}

TEST_F(AmdCompileTest, CliCompilesHipAndLlvmIrForHipTargets) {
  TempDir temp;
  const fs::path dir = temp.path();
  std::ofstream(dir / "tile.ll") << k_amdgpu_ir;
  fs::path out = dir / "tile.hsaco";
  CommandResult r = run_command({kjit_cli_path(), "compile", (dir / "tile.ll").string(), "--target", "hip:gfx942", "-o",
                                 out.string(), "--json", "--socket", daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["artifact_kind"], "hsaco");
  EXPECT_EQ(json["target"], "hip:gfx942");
  EXPECT_EQ(json["artifact_size"].get<uint64_t>(), fs::file_size(out));
  bool has_wavefront = false;
  for (const auto& k : json["kernels"]) has_wavefront |= k["wavefront_size"] == 64;
  EXPECT_TRUE(has_wavefront) << r.out;

  if (!find_hiprtc()) return;
  std::ofstream(dir / "tile.hip") << k_hip_kernel;
  fs::path hip_out = dir / "from_hip.hsaco";
  r = run_command({kjit_cli_path(), "compile", (dir / "tile.hip").string(), "--target", "hip:gfx90a", "-o",
                   hip_out.string(), "--socket", daemon_->socket_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(hip_out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(elf_header_of(bytes).machine, k_em_amdgpu);
}

// The AMD pipelines take the same edits and plugins as NVIDIA's: an edit from
// the configuration scoped to llvm-amdgpu, and an LLVM pass plugin whose
// pass runs in llvm-passes (its global reaches the code object's symbols).
TEST(AmdPipelineEdits, ConfigurationEditsAndLlvmPassPluginsApplyToAmdPipelines) {
  TestDaemon daemon(DaemonOptions{
      {"--no-cache"},
      "llvm_pass_plugins = [\"" + plugin_path("llvm_marker_pass_plugin") +
          "\"]\n[pipelines.amd-unoptimised]\ninputs = [\"llvm-ir\"]\n"
          "[[pipelines.amd-unoptimised.stages]]\nname = \"llvm-amdgpu\"\ntakes = \"llvm\"\ngives = \"amdgcn-object\"\n"
          "passes = [\"amdgpu-codegen\"]\n"
          "[[pipelines.amd-unoptimised.stages]]\nname = \"lld\"\ntakes = \"amdgcn-object\"\ngives = \"hsaco\"\n"
          "passes = [\"lld-link\"]\n"});
  Client client(daemon.socket_path());
  CompileRequest request;
  request.input_kind = InputKind::llvm_ir;
  request.input = k_amdgpu_ir;
  request.input_name = "tile.ll";
  request.target = "hip:gfx90a";
  request.pass_args["llvm-passes.pipeline"] = "kjit-test-marker,default<O1>";
  Result<CompileResult> marked = client.compile(request);
  ASSERT_TRUE(marked) << marked.error().message << "\n" << marked.error().log;
  EXPECT_NE(marked->artifact.find("kjit_test_marker"), std::string::npos);
  request.pass_args["llvm-passes.pipeline"] = "default<O1>";
  Result<CompileResult> plain = client.compile(request);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->artifact.find("kjit_test_marker"), std::string::npos);

  // A named pipeline ending in a code object is an AMD pipeline.
  request.pass_args.clear();
  request.pipeline = "amd-unoptimised";
  Result<CompileResult> named = client.compile(request);
  ASSERT_TRUE(named) << named.error().message << "\n" << named.error().log;
  EXPECT_EQ(named->pipeline, "amd-unoptimised");
  EXPECT_EQ(named->artifact_kind, ArtifactKind::hsaco);
  request.target = "cuda:90";
  EXPECT_TRUE(fails_with(client.compile(request), ErrorCode::invalid_argument, "builds for AMD targets"));
}

// A host without HIPRTC (here: one named where there is none) still runs
// kjitd: HIP source is refused as a missing precondition, naming what is
// missing, and LLVM IR for hip: targets still builds.
TEST(AmdWithoutHiprtc, HipSourceIsAFailedPreconditionAndLlvmIrStillBuilds) {
  DaemonOptions options{{"--no-cache"}};
  options.env = {"KJIT_HIPRTC_LIBRARY=/nonexistent/libamdhip64.so"};
  TestDaemon daemon(options);
  Client client(daemon.socket_path());
  CompileRequest hip;
  hip.input_kind = InputKind::hip_source;
  hip.input = k_hip_kernel;
  hip.target = "hip:gfx90a";
  EXPECT_TRUE(fails_with(client.compile(hip), ErrorCode::failed_precondition, "/nonexistent/libamdhip64.so"));
  CompileRequest ir;
  ir.input_kind = InputKind::llvm_ir;
  ir.input = k_amdgpu_ir;
  ir.target = "hip:gfx90a";
  Result<CompileResult> built = client.compile(ir);
  EXPECT_TRUE(built) << built.error().message;
}

// HIPRTC may abort its process: a daemon that compiles in its own process
// refuses HIP source rather than risk itself.
TEST(AmdWithoutWorkers, HipSourceIsRefusedWhenCompilesRunInTheDaemon) {
  if (!find_hiprtc()) GTEST_SKIP() << "no HIPRTC on this host";
  TestDaemon daemon(std::vector<std::string>{"--no-cache", "--compile-workers", "0"});
  CompileRequest hip;
  hip.input_kind = InputKind::hip_source;
  hip.input = k_hip_kernel;
  hip.target = "hip:gfx90a";
  EXPECT_TRUE(fails_with(Client(daemon.socket_path()).compile(hip), ErrorCode::failed_precondition,
                         "compiles only in compile workers"));
}

}  // namespace
}  // namespace kjit::test
