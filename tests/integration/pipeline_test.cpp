// The configurable pipeline through a real kjitd: the LLVM path, retargeted
// PTX, pass arguments, plugins that insert, disable, replace and override,
// their effect on the cache key, and bad input.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <filesystem>
#include <fstream>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/elf_header.h"
#include "support/fails_with.h"
#include "support/llvm_kernels.h"
#include "test_pipelines.h"
#include "test_plugins.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

uint32_t elf_sm(const std::string& bytes) {
  return elf_header_of(bytes).sm;
}

// "stage/pass" for every pass that ran, metadata excluded.
std::vector<std::string> passes_run(const CompileResult& result) {
  std::vector<std::string> out;
  for (const StageTiming& stage : result.timings)
    if (stage.stage != "metadata")
      for (const PassTiming& pass : stage.passes) out.push_back(stage.stage + "/" + pass.pass);
  return out;
}

// The same list, read from `kjit pipeline show`'s TOML.
std::vector<std::string> passes_shown(const PipelineDescription& description) {
  std::vector<std::string> out;
  toml::table root = toml::parse(description.toml);
  const toml::array* stages = root["pipelines"][description.name]["stages"].as_array();
  if (!stages) return out;
  for (const toml::node& node : *stages) {
    const toml::table& stage = *node.as_table();
    for (const toml::node& pass : *stage["passes"].as_array())
      out.push_back(stage["name"].value_or(std::string()) + "/" + pass.value_or(std::string()));
  }
  return out;
}

std::string key_component(const CompileResult& result, const std::string& name) {
  for (const KeyComponent& c : result.key_components)
    if (c.name == name) return c.value;
  return "<absent>";
}

class LlvmPipelineTest : public ToolkitDaemonTest {
 protected:
  // --no-cache: these tests look at the passes that ran.
  static void SetUpTestSuite() { start_daemon({"--no-cache"}); }
};

TEST_F(LlvmPipelineTest, LlvmIrCompilesToCubinForSm80AndSm90ThroughEveryStage) {
  for (auto [target, sm] : {std::pair<std::string, uint32_t>{"cuda:80", 80}, {"cuda:90", 90}}) {
    auto result = client().compile(llvm_request(k_llvm_vadd, target));
    ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
    EXPECT_EQ(elf_sm(result->artifact), sm);
    ASSERT_EQ(result->kernels.size(), 1u);
    EXPECT_EQ(result->kernels[0].name, "vadd");
    EXPECT_EQ(passes_run(*result),
              (std::vector<std::string>{"llvm-opt/libdevice-link", "llvm-opt/nvvm-reflect", "llvm-opt/llvm-passes",
                                        "llvm-nvptx/nvptx-codegen", "ptx/ptx-retarget", "nvjitlink/nvjitlink-link"}));
    EXPECT_EQ(result->pipeline, "llvm-nvidia");
    EXPECT_EQ(key_component(*result, "toolchain.llvm").substr(0, 3), "19.");
  }
}

TEST_F(LlvmPipelineTest, PtxForSm100AndSm107IsRetargetedFromLlvmsNewestProcessor) {
  struct Case {
    std::string target, dot_target, dot_version;
  };
  for (const Case& c : {Case{"cuda:100", ".target sm_100", ".version 8.6"}, Case{"cuda:107", ".target sm_107", ".version 9.4"},
                        Case{"cuda:100a", ".target sm_100a", ".version 8.6"}, Case{"cuda:90", ".target sm_90", ".version 8.5"}}) {
    auto request = llvm_request(k_llvm_vadd, c.target);
    request.artifact = ArtifactKind::ptx;
    auto result = client().compile(request);
    ASSERT_TRUE(result) << c.target << ": " << result.error().message << "\n" << result.error().log;
    EXPECT_EQ(result->artifact_kind, ArtifactKind::ptx);
    EXPECT_NE(result->artifact.find(c.dot_target + "\n"), std::string::npos) << c.target << "\n" << result->artifact.substr(0, 300);
    EXPECT_NE(result->artifact.find(c.dot_version + "\n"), std::string::npos) << c.target;
    EXPECT_NE(result->artifact.find(".entry vadd"), std::string::npos);
  }
}

TEST_F(LlvmPipelineTest, Sm100CubinFromLlvmIsBuilt) {
  auto result = client().compile(llvm_request(k_llvm_vadd, "cuda:100"));
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_EQ(elf_sm(result->artifact), 100u);
}

TEST_F(LlvmPipelineTest, Sm107CubinNamesTheToolkitOrFallsBackToPtxWhenAllowed) {
  // A host whose one toolkit (CUDA 13.0) cannot build sm_107.
  TestDaemon daemon(with_the_system_toolkit_only());
  Client client(daemon.socket_path());
  auto refused = client.compile(llvm_request(k_llvm_vadd, "cuda:107"));
  ASSERT_TRUE(fails_with(refused, ErrorCode::invalid_argument, "CUDA toolkit 13.0"));
  EXPECT_NE(refused.error().message.find("needs CUDA 13.4"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("allow_ptx_fallback"), std::string::npos);

  auto request = llvm_request(k_llvm_vadd, "cuda:107");
  request.allow_ptx_fallback = true;
  auto ptx = client.compile(request);
  ASSERT_TRUE(ptx) << ptx.error().message;
  EXPECT_EQ(ptx->artifact_kind, ArtifactKind::ptx);
  EXPECT_NE(ptx->artifact.find(".target sm_107"), std::string::npos);
  // The fallback's note names the toolkit it needs; another says which LLVM
  // CPU wrote the PTX.
  ASSERT_EQ(ptx->notes.size(), 2u);
  EXPECT_NE(ptx->notes[0].find("for CPU sm_90"), std::string::npos) << ptx->notes[0];
  EXPECT_NE(ptx->notes[1].find("13.4"), std::string::npos) << ptx->notes[1];
  EXPECT_NE(ptx->key, refused.error().message);  // a different key: fallback is part of it
  EXPECT_EQ(key_component(*ptx, "ptx_fallback"), "allowed");
}

TEST_F(LlvmPipelineTest, BitcodeInputCompiles) {
  const fs::path dir = daemon_->dir();
  std::ofstream(dir / "k.ll") << k_llvm_vadd;
  auto as = run_command({std::string(KJIT_TEST_LLVM_BIN) + "/llvm-as", (dir / "k.ll").string(), "-o", (dir / "k.bc").string()});
  ASSERT_EQ(as.exit_code, 0) << as.err;
  CompileRequest request = llvm_request(read_file((dir / "k.bc").string()), "cuda:90");
  request.input_kind = InputKind::llvm_bitcode;
  auto result = client().compile(request);
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_EQ(elf_sm(result->artifact), 90u);
  EXPECT_EQ(key_component(*result, "input.kind"), "llvm-bitcode");
}

TEST_F(LlvmPipelineTest, PassArgumentsReachLlvmAndChangeTheKey) {
  auto o3 = client().compile(llvm_request(k_llvm_vadd, "cuda:90"));
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pass_args["llvm-passes.pipeline"] = "default<O0>";
  auto o0 = client().compile(request);
  ASSERT_TRUE(o3 && o0);
  EXPECT_NE(o3->key, o0->key);
  EXPECT_EQ(key_component(*o0, "pass_args"), "llvm-passes.pipeline=default<O0>");

  request.pass_args["llvm-passes.pipeline"] = "function(no-such-pass)";
  auto bad = client().compile(request);
  ASSERT_TRUE(fails_with(bad, ErrorCode::invalid_argument, "llvm-opt/llvm-passes"));
  EXPECT_NE(bad.error().message.find("no-such-pass"), std::string::npos) << bad.error().message;

  request.pass_args = {{"no-such-pass.key", "1"}};
  bad = client().compile(request);
  ASSERT_TRUE(fails_with(bad, ErrorCode::invalid_argument));
  request.pass_args = {{"llvm-passes.no-such-key", "1"}};
  bad = client().compile(request);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("takes no argument"), std::string::npos);
}

TEST_F(LlvmPipelineTest, BadLlvmInputIsInvalidArgumentNamingStageAndPass) {
  struct Case {
    std::string ir;
    InputKind kind;
    std::string expect;
  };
  for (const Case& c : {Case{"define void @k( {", InputKind::llvm_ir, "could not parse"},
                        Case{std::string("BC\xC0\xDE garbage bitcode", 20), InputKind::llvm_bitcode, "could not parse"},
                        Case{"target triple = \"x86_64-pc-linux-gnu\"\ndefine void @k() { ret void }\n",
                             InputKind::llvm_ir, "x86_64"},
                        Case{"define void @k() {\n  ret i32 0\n}\n", InputKind::llvm_ir, "could not parse"}}) {
    auto request = llvm_request(c.ir, "cuda:90");
    request.input_kind = c.kind;
    auto result = client().compile(request);
    ASSERT_FALSE(result) << c.ir;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << c.ir;
    EXPECT_NE(result.error().message.find("llvm-opt/llvm-passes"), std::string::npos) << result.error().message;
    EXPECT_NE((result.error().message + result.error().log).find(c.expect), std::string::npos)
        << result.error().message << "\n" << result.error().log;
  }
  auto health = client().health();
  EXPECT_TRUE(health && *health == "SERVING");
}

TEST_F(LlvmPipelineTest, UnknownNamedPipelineListsTheKnownOnes) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "no-such-pipeline";
  auto result = client().compile(request);
  ASSERT_TRUE(fails_with(result, ErrorCode::invalid_argument, "llvm-nvidia"));
  request.pipeline = "cuda-nvidia";  // exists, but takes CUDA C++
  result = client().compile(request);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("does not take llvm-ir"), std::string::npos) << result.error().message;
}

// Plugins and configured pipelines: one daemon with all example plugins but
// the failing and wrong-ABI ones, and one without any, to compare keys.
class PluginPipelineTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() {
    DaemonOptions options{{"--no-cache"},
                          pipeline_toml("llvm-unoptimized", "llvm-ir",
                                        {{"llvm-opt", "llvm", "llvm", {"llvm-passes"}},
                                         {"llvm-nvptx", "llvm", "ptx", {"nvptx-codegen"}},
                                         {"nvjitlink", "ptx", "cubin", {"nvjitlink-link"}}}) +
                              llvm_test_pipeline("llvm-failing", {"test-fail"}, false) +
                              llvm_test_pipeline("llvm-garbage", {"test-garbage"}, true)};
    for (const char* p : {"ptx_rewrite_plugin", "disable_pass_plugin", "override_stage_plugin", "key_component_plugin",
                          "debug_insensitive_digest_plugin", "failing_pass_plugin"})
      options.args.insert(options.args.end(), {"--plugin", plugin_path(p)});
    start_daemon(options);
    plain_ = std::make_unique<TestDaemon>(std::vector<std::string>{"--no-cache"});
  }
  static void TearDownTestSuite() {
    plain_.reset();
    ToolkitDaemonTest::TearDownTestSuite();
  }
  static Client plugged() { return client(); }
  static Client plain() { return Client(plain_->socket_path()); }

  static inline std::unique_ptr<TestDaemon> plain_;
};

TEST_F(PluginPipelineTest, ShowListsThePassesThatThenRun) {
  for (std::string pipeline : {"", "llvm-unoptimized"}) {
    auto shown = plugged().describe_pipeline(InputKind::llvm_ir, "cuda:90", pipeline);
    ASSERT_TRUE(shown) << shown.error().message;
    auto request = llvm_request(k_llvm_vadd, "cuda:90");
    request.pipeline = pipeline;
    auto result = plugged().compile(request);
    ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
    EXPECT_EQ(passes_run(*result), passes_shown(*shown)) << shown->toml;
  }
}

TEST_F(PluginPipelineTest, InsertedPtxPassRunsAfterCodegenAndStampsThePtx) {
  auto shown = plugged().describe_pipeline(InputKind::llvm_ir, "cuda:90", "");
  ASSERT_TRUE(shown);
  std::vector<std::string> passes = passes_shown(*shown);
  auto codegen = std::find(passes.begin(), passes.end(), "llvm-nvptx/nvptx-codegen");
  ASSERT_NE(codegen, passes.end());
  EXPECT_EQ(*(codegen + 1), "llvm-nvptx/test-ptx-rewrite");

  // llvm-unoptimized has no "ptx" stage for the override-stage plugin to
  // strip comments in, so the stamp survives to the PTX.
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-unoptimized";
  request.artifact = ArtifactKind::ptx;
  request.pass_args["test-ptx-rewrite.tag"] = "abc";
  auto result = plugged().compile(request);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_NE(result->artifact.find("// rewritten by test-ptx-rewrite tag=abc\n"), std::string::npos)
      << result->artifact.substr(0, 300);
  std::vector<std::string> ran = passes_run(*result);
  EXPECT_NE(std::find(ran.begin(), ran.end(), "llvm-nvptx/test-ptx-rewrite"), ran.end());
  EXPECT_EQ(key_component(*result, "plugin.test-ptx-rewrite"), "1.0");
  EXPECT_EQ(key_component(*result, "pass_args"), "test-ptx-rewrite.tag=abc");
}

TEST_F(PluginPipelineTest, DisabledPassIsGoneOnlyFromThePipelineThatNamesIt) {
  auto unoptimized = plugged().describe_pipeline(InputKind::llvm_ir, "cuda:90", "llvm-unoptimized");
  auto by_default = plugged().describe_pipeline(InputKind::llvm_ir, "cuda:90", "");
  ASSERT_TRUE(unoptimized && by_default);
  auto has = [](const std::vector<std::string>& v, const std::string& p) { return std::find(v.begin(), v.end(), p) != v.end(); };
  EXPECT_FALSE(has(passes_shown(*unoptimized), "llvm-opt/llvm-passes")) << unoptimized->toml;
  EXPECT_TRUE(has(passes_shown(*by_default), "llvm-opt/llvm-passes"));
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-unoptimized";
  auto result = plugged().compile(request);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(has(passes_run(*result), "llvm-opt/llvm-passes"));
  EXPECT_EQ(key_component(*result, "plugin.test-disable"), "1.0");
}

TEST_F(PluginPipelineTest, OverriddenStageRunsThePluginsPasses) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.artifact = ArtifactKind::ptx;
  auto result = plugged().compile(request);
  ASSERT_TRUE(result) << result.error().message;
  std::vector<std::string> passes = passes_run(*result);
  EXPECT_EQ(passes.back(), "ptx/test-strip-ptx-comments");
  EXPECT_EQ(result->artifact.find("//"), std::string::npos) << result->artifact.substr(0, 200);
  auto plain_result = plain().compile(request);
  ASSERT_TRUE(plain_result);
  EXPECT_NE(plain_result->artifact.find("//"), std::string::npos);
}

TEST_F(PluginPipelineTest, PluginsChangeTheKeyAndKeyComponentsAreReported) {
  auto with = plugged().compile(llvm_request(k_llvm_vadd, "cuda:90"));
  auto without = plain().compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(with && without);
  EXPECT_NE(with->key, without->key);
  EXPECT_EQ(key_component(*with, "plugin.test-key-component"), "2.1");
  EXPECT_EQ(key_component(*with, "plugin.test-key-component.abi"), "kernel-abi-7");
  EXPECT_EQ(key_component(*without, "plugin.test-key-component"), "<absent>");
  // The plain daemon's key is stable from one request to the next.
  auto again = plain().compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->key, without->key);
}

TEST_F(PluginPipelineTest, DigestPluginGivesModulesThatDifferOnlyInDebugLocationsOneKey) {
  auto a = plugged().compile(llvm_request(k_llvm_scale_dbg, "cuda:90"));
  auto b = plugged().compile(llvm_request(k_llvm_scale_moved(), "cuda:90"));
  ASSERT_TRUE(a) << a.error().message << "\n" << a.error().log;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(a->key, b->key);
  EXPECT_EQ(key_component(*a, "input.digest").substr(0, 31), "plugin.test-nodbg-digest:fnv1a-");
  auto plain_a = plain().compile(llvm_request(k_llvm_scale_dbg, "cuda:90"));
  auto plain_b = plain().compile(llvm_request(k_llvm_scale_moved(), "cuda:90"));
  ASSERT_TRUE(plain_a && plain_b);
  EXPECT_NE(plain_a->key, plain_b->key);
}

TEST_F(PluginPipelineTest, FailingAndGarbagePassesGiveClearErrors) {
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.pipeline = "llvm-failing";
  auto failed = plugged().compile(request);
  ASSERT_TRUE(fails_with(failed, ErrorCode::invalid_argument, "llvm-nvptx/test-fail"));
  EXPECT_NE(failed.error().log.find("refusing this module on purpose"), std::string::npos);

  request.pipeline = "llvm-garbage";
  auto garbage = plugged().compile(request);
  ASSERT_TRUE(fails_with(garbage, ErrorCode::invalid_argument, "nvjitlink/nvjitlink-link"));
  EXPECT_TRUE(daemon_->running());
}

TEST(LlvmPassPlugin, PassesOfAnLlvmPluginAreUsableByNameInLlvmPasses) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(DaemonOptions{{}, "llvm_pass_plugins = [\"" + plugin_path("llvm_marker_pass_plugin") + "\"]\n"});
  auto request = llvm_request(k_llvm_vadd, "cuda:90");
  request.artifact = ArtifactKind::ptx;
  request.pass_args["llvm-passes.pipeline"] = "kjit-test-marker,default<O1>";
  auto result = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  EXPECT_NE(result->artifact.find("kjit_test_marker"), std::string::npos) << result->artifact.substr(0, 400);
  request.pass_args["llvm-passes.pipeline"] = "default<O1>";
  auto without = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(without);
  EXPECT_EQ(without->artifact.find("kjit_test_marker"), std::string::npos);
}

// Start-up refusals: kjitd exits with a message instead of serving.
TEST(PluginStartup, WrongAbiVersionIsRefusedAtStartup) {
  auto r = run_kjitd({"--no-cache", "--plugin", plugin_path("wrong_abi_plugin")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("plugin ABI version 2"), std::string::npos) << r.err;
}

TEST(PluginStartup, MissingPluginFileIsRefusedAtStartup) {
  auto r = run_kjitd({"--no-cache", "--plugin", "/nonexistent/libnothing.so"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/libnothing.so"), std::string::npos) << r.err;
}

TEST(ToolkitRanges, AConfiguredToolkitBuildsItsRangeAndAMissingOneIsRefusedAtStartup) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const std::string range = "[[toolkits]]\nfrom = \"cuda:100\"\nto = \"cuda:121\"\ncuda_home = ";
  auto refused = run_kjitd({"--no-cache"}, range + "\"/nonexistent-cuda\"\n");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("sm_100..sm_121"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("/nonexistent-cuda"), std::string::npos) << refused.err;

  // The toolkit kjit was built with, named by another path, serves sm_100+.
  const std::string home = fs::canonical(cuda_home()).string();
  TestDaemon daemon(DaemonOptions{{}, range + "\"" + home + "\"\n"});
  auto result = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:100"));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(elf_sm(result->artifact), 100u);
}

TEST(PluginStartup, EditWithAMissingAnchorIsRefusedAtStartup) {
  auto r = run_kjitd({"--no-cache"}, "[[edits]]\nop = \"disable\"\nanchor = \"no-such-pass\"\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no-such-pass"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kjit::test
