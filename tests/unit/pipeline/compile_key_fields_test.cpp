// Every field of a CompileJob that can change the artifact changes its cache
// key, one field at a time, and what cannot change the artifact leaves the
// key alone. A field added to CompileJob without a key component would be a
// silent cache-correctness bug: the size check below makes this test fail to
// compile until the new field has its line here.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "pipeline/builtin_passes.h"
#include "pipeline/compile_key.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {
namespace {

// CompileJob's fields on this platform (x86_64, libstdc++): input_kind,
// input, input_name, target, options, headers, name_expressions, wanted,
// pipeline, pass_args, allow_ptx_fallback, triton_build, triton_edits,
// triton_plugins_off. A new
// field changes the size.
static_assert(sizeof(CompileJob) == 392,
              "CompileJob changed: name the new field in for_each_field (src/core/compile_job.h), give it a key "
              "component in src/pipeline/compile_key.cpp and a line in "
              "EveryFieldThatCanChangeTheArtifactChangesTheKey, then update this size");

struct Mutation {
  std::string field;
  std::function<void(CompileJob&)> change;
  bool changes_key;
};

CompileJob cuda_job() {
  CompileJob job;
  job.input_kind = InputKind::cuda_source;
  job.input = "#include \"h.h\"\n__global__ void k(float* x) { x[0] = H; }\n";
  job.input_name = "k.cu";
  job.target = parse_target("cuda:90").value();
  job.options = {"-DA=1"};
  job.headers = {{"h.h", "#define H 1.0f\n"}};
  return job;
}

CompileJob llvm_job() {
  CompileJob job;
  job.input_kind = InputKind::llvm_ir;
  job.input = "target triple = \"nvptx64-nvidia-cuda\"\ndefine ptx_kernel void @k() { ret void }\n";
  job.input_name = "k.ll";
  job.target = parse_target("cuda:90").value();
  return job;
}

std::string key_of(const CompilePipeline& pipeline, const CompileJob& job) {
  Result<CompilePlan> plan = pipeline.plan(job);
  EXPECT_TRUE(plan) << plan.error().message;
  return plan ? plan->key.hex : std::string();
}

class CompileKeyFields : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = CompilePipeline::create(CudaToolkit::load(), {});
    ASSERT_TRUE(created) << created.error().message;
    pipeline_ = std::move(created.value());
  }
  std::shared_ptr<const CompilePipeline> pipeline_;
};

TEST_F(CompileKeyFields, EveryFieldThatCanChangeTheArtifactChangesTheKey) {
  const std::vector<Mutation> mutations = {
      {"input", [](CompileJob& j) { j.input += "// more\n"; }, true},
      // __FILE__ (assert messages) and line information carry the name into
      // the binary.
      {"input_name", [](CompileJob& j) { j.input_name = "other.cu"; }, true},
      {"target", [](CompileJob& j) { j.target = parse_target("cuda:100").value(); }, true},
      {"target suffix", [](CompileJob& j) { j.target = parse_target("cuda:90a").value(); }, true},
      {"options", [](CompileJob& j) { j.options = {"-DA=2"}; }, true},
      {"options order", [](CompileJob& j) { j.options = {"-DA=1", "-UA"}; }, true},
      {"headers: a content", [](CompileJob& j) { j.headers["h.h"] = "#define H 2.0f\n"; }, true},
      {"headers: a name", [](CompileJob& j) { j.headers = {{"g.h", "#define H 1.0f\n"}}; }, true},
      {"headers: one more", [](CompileJob& j) { j.headers["unused.h"] = ""; }, true},
      {"name_expressions", [](CompileJob& j) { j.name_expressions = {"k"}; }, true},
      {"wanted", [](CompileJob& j) { j.wanted = ArtifactKind::ptx; }, true},
      {"allow_ptx_fallback", [](CompileJob& j) { j.allow_ptx_fallback = true; }, true},
      {"triton_build", [](CompileJob& j) { j.triton_build = "triton-3.9.0"; }, true},
      {"triton_plugins_off", [](CompileJob& j) { j.triton_plugins_off = {"triton-utlx"}; }, true},
      // The default pipeline named explicitly is the same pipeline.
      {"pipeline (the default, by name)", [](CompileJob& j) { j.pipeline = "cuda-nvidia"; }, false},
      {"input_kind", [](CompileJob& j) { j.input_kind = InputKind::ptx; j.input = ".version 8.5\n"; }, true},
  };
  // Every field for_each_field names has a line here (pass_args, whose
  // pipeline is the LLVM one, and triton_edits, which only Triton's takes,
  // are in tests of their own below).
  CompileJob fields;
  for_each_field(fields, [&](std::string_view name, const auto&) {
    if (name == "pass_args" || name == "triton_edits") return;
    const bool covered = std::any_of(mutations.begin(), mutations.end(),
                                     [&](const Mutation& m) { return m.field.starts_with(name); });
    EXPECT_TRUE(covered) << "no line here changes CompileJob::" << name;
  });
  const CompileJob base = cuda_job();
  const std::string base_key = key_of(*pipeline_, base);
  ASSERT_FALSE(base_key.empty());
  EXPECT_EQ(key_of(*pipeline_, cuda_job()), base_key) << "the key of one job is not stable";
  for (const Mutation& mutation : mutations) {
    CompileJob changed = base;
    mutation.change(changed);
    const std::string key = key_of(*pipeline_, changed);
    if (mutation.changes_key)
      EXPECT_NE(key, base_key) << mutation.field << " does not change the key";
    else
      EXPECT_EQ(key, base_key) << mutation.field << " changes the key";
  }
}

TEST_F(CompileKeyFields, PassArgumentsChangeTheKeyAndTheInputNameOfIrDoesNot) {
  const CompileJob base = llvm_job();
  const std::string base_key = key_of(*pipeline_, base);
  CompileJob with_args = base;
  with_args.pass_args = {{"llvm-passes.pipeline", "default<O1>"}};
  EXPECT_NE(key_of(*pipeline_, with_args), base_key);
  // IR carries its own names and debug information; the request's name for
  // it reaches only messages.
  CompileJob renamed = base;
  renamed.input_name = "elsewhere.ll";
  EXPECT_EQ(key_of(*pipeline_, renamed), base_key);
}

// A request's edits to Triton's stages change what the build makes: each
// edit, its order and its fields are in the key; a pipeline that runs no
// Triton build refuses them rather than ignoring them.
TEST_F(CompileKeyFields, TritonEditsOfARequestChangeTheKey) {
  CompileJob base;
  base.input_kind = InputKind::triton;
  base.input = "module {\n}\n";
  base.input_name = "k.ttir";
  base.target = parse_target("cuda:90").value();
  base.triton_build = "triton-3.9.0";
  const std::string base_key = key_of(*pipeline_, base);
  ASSERT_FALSE(base_key.empty());
  const TritonEdit cse{"insert-after", "ttgir/canonicalize", "cse", "", {}};
  const TritonEdit no_cse{"disable", "cse", "", "", {}};
  CompileJob one = base;
  one.triton_edits = {cse};
  CompileJob two = base;
  two.triton_edits = {cse, no_cse};
  CompileJob swapped = base;
  swapped.triton_edits = {no_cse, cse};
  CompileJob other_anchor = base;
  other_anchor.triton_edits = {{"insert-after", "canonicalize", "cse", "", {}}};
  const std::vector<std::string> keys = {base_key, key_of(*pipeline_, one), key_of(*pipeline_, two),
                                         key_of(*pipeline_, swapped), key_of(*pipeline_, other_anchor)};
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = i + 1; j < keys.size(); ++j) EXPECT_NE(keys[i], keys[j]) << "edits " << i << " and " << j;
  EXPECT_EQ(key_of(*pipeline_, one), keys[1]) << "the key of one set of edits is not stable";

  CompileJob cuda = cuda_job();
  cuda.triton_edits = {cse};
  Result<CompilePlan> refused = pipeline_->plan(cuda);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << refused.error().message;
  CompileJob malformed = base;
  malformed.triton_edits = {{"override-pipeline", "", "", "", {}}};
  Result<CompilePlan> bad = pipeline_->plan(malformed);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument) << bad.error().message;
}

TEST_F(CompileKeyFields, AmdTargetsTheirOptionsAndToolchainsEnterTheKey) {
  CompileJob base = llvm_job();
  base.input = "target triple = \"amdgcn-amd-amdhsa\"\ndefine amdgpu_kernel void @k() { ret void }\n";
  base.target = parse_target("hip:gfx90a").value();
  Result<CompilePlan> plan = pipeline_->plan(base);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->pipeline.name, "llvm-amdgpu");
  bool triple = false;
  for (const KeyComponent& c : plan->key.components) triple |= c.name == "llvm.triple" && c.value == "amdgcn-amd-amdhsa";
  EXPECT_TRUE(triple) << "the key does not name the amdgcn triple";
  const std::string base_key = plan->key.hex;
  CompileJob other = base;
  other.target = parse_target("hip:gfx942").value();
  EXPECT_NE(key_of(*pipeline_, other), base_key);
  CompileJob v4 = base;
  v4.options = {"-mcode-object-version=4"};
  EXPECT_NE(key_of(*pipeline_, v4), base_key);

  CompileJob hip = base;
  hip.input_kind = InputKind::hip_source;
  hip.input = "extern \"C\" __global__ void k() {}\n";
  hip.input_name = "k.hip";
  Result<CompilePlan> hip_plan = pipeline_->plan(hip);
  ASSERT_TRUE(hip_plan) << hip_plan.error().message;
  EXPECT_EQ(hip_plan->pipeline.name, "hip-amdgpu");
  bool hiprtc = false;
  for (const KeyComponent& c : hip_plan->key.components) hiprtc |= c.name == "toolchain.hiprtc";
  EXPECT_TRUE(hiprtc) << "the key does not name HIPRTC";
}

}  // namespace
}  // namespace kjit

// --- what the passes declare ---------------------------------------------------

namespace kjit {
namespace {

// HIPRTC, like NVRTC, writes the request's name into the code object
// (__FILE__): two names, two keys.
TEST_F(CompileKeyFields, AHipRequestsNameChangesItsKey) {
  CompileJob job;
  job.input_kind = InputKind::hip_source;
  job.input = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
  job.input_name = "k.hip";
  job.target = parse_target("hip:gfx90a").value();
  const std::string key = key_of(*pipeline_, job);
  ASSERT_FALSE(key.empty());
  job.input_name = "other.hip";
  EXPECT_NE(key_of(*pipeline_, job), key);
}

PassImpl pass_named(std::string name, KeyDeclaration declares) {
  PassImpl pass;
  pass.name = std::move(name);
  pass.version = "1";
  pass.run = [](PassContext&, std::string_view ir) -> Result<PassOutput> { return PassOutput{std::string(ir), ""}; };
  pass.declares_key = std::move(declares);
  return pass;
}

TEST(PassDeclarations, APassThatDeclaresNothingIsRefused) {
  PassRegistry registry;
  Status added = registry.add(pass_named("silent", nullptr));
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(added.error().message.find("'silent'"), std::string::npos) << added.error().message;
  EXPECT_EQ(registry.find("silent"), nullptr);
  EXPECT_TRUE(registry.add(pass_named("rewrite", declares_nothing)));
}

TEST(PassDeclarations, EveryBuiltinPassIsRegisteredWithItsDeclaration) {
  PassRegistry registry;
  register_builtin_passes(registry);
  const std::vector<std::string> expected = {"amdgpu-codegen", "hiprtc-compile", "libdevice-link", "lld-link",
                                             "llvm-passes",    "nvjitlink-link", "nvptx-codegen",  "nvrtc-compile",
                                             "nvvm-reflect",   "ptx-retarget",   "tileiras-assemble", "triton-compile",
                                             "triton-compile-amd"};
  EXPECT_EQ(registry.names(), expected) << "a builtin pass without a declaration is refused, so it would be missing";
}

// The key takes a toolchain from what the pass declares, not from its name:
// a pass called anything still brings its toolchain into the key.
TEST(PassDeclarations, AToolchainIsInTheKeyWhateverItsPassIsCalled) {
  PassRegistry registry;
  ASSERT_TRUE(registry.add(pass_named("frobnicate", [](const CompileJob&, const CudaToolkit&) {
    return std::vector<KeyComponent>{{"toolchain.frob", "7.1"}};
  })));
  PipelineSpec pipeline;
  pipeline.name = "custom";
  pipeline.stages = {StageSpec{"only", IrKind::ptx, IrKind::ptx, {"frobnicate"}}};
  const CompileJob job = cuda_job();
  auto toolkit = CudaToolkit::load();
  const CacheKey key = compile_key(KeyInputs{job, pipeline, registry, *toolkit, {}, std::nullopt, {}});
  const auto found = std::find_if(key.components.begin(), key.components.end(),
                                  [](const KeyComponent& c) { return c.name == "toolchain.frob"; });
  ASSERT_NE(found, key.components.end());
  EXPECT_EQ(found->value, "7.1");
}

// What the artifact says built it comes from the passes' declarations too:
// the toolchains they name, each once, in pipeline order.
TEST(PassDeclarations, TheArtifactNamesTheToolchainsItsPassesDeclare) {
  PassRegistry registry;
  PassImpl front = pass_named("frob-front", declares_nothing);
  front.names_toolchain = [](const std::string&) { return std::string("Frob 7.1"); };
  PassImpl link = pass_named("frob-link", declares_nothing);
  link.names_toolchain = [](const std::string& cuda) { return "linked by " + cuda; };
  PassImpl again = pass_named("frob-again", declares_nothing);
  again.names_toolchain = [](const std::string&) { return std::string("Frob 7.1"); };
  ASSERT_TRUE(registry.add(front));
  ASSERT_TRUE(registry.add(link));
  ASSERT_TRUE(registry.add(again));
  ASSERT_TRUE(registry.add(pass_named("rewrite", declares_nothing)));  // runs no toolchain
  PipelineSpec pipeline;
  pipeline.name = "custom";
  pipeline.stages = {StageSpec{"a", IrKind::ptx, IrKind::ptx, {"frob-front", "rewrite"}},
                     StageSpec{"b", IrKind::ptx, IrKind::ptx, {"frob-again", "frob-link"}}};
  EXPECT_EQ(toolchains_of(pipeline, registry, "13.0 (system)"), "Frob 7.1 + linked by 13.0 (system)");
  pipeline.stages = {StageSpec{"a", IrKind::ptx, IrKind::ptx, {"rewrite"}}};
  EXPECT_EQ(toolchains_of(pipeline, registry, "13.0 (system)"), "");

  PassRegistry builtin;
  register_builtin_passes(builtin);
  for (const char* name : {"nvrtc-compile", "nvjitlink-link", "hiprtc-compile", "amdgpu-codegen", "lld-link"})
    EXPECT_TRUE(builtin.find(name)->names_toolchain) << name << " runs a toolchain but does not name it";
}

}  // namespace
}  // namespace kjit
