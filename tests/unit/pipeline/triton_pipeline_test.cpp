// Triton's stages as a kjit pipeline: the configuration's edits applied for
// display as the worker applies them for a .ttir source, the edits' and
// plugins' JSON the worker takes, and which edits are Triton's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "pipeline/cache_key.h"
#include "pipeline/triton_pipeline.h"
#include "pipeline/triton_request_edit.h"

namespace kjit {
namespace {

TritonPipeline nvidia_stages() {
  TritonPipeline p;
  p.stages = {{"ttir", {"inline", "canonicalize", "cse"}},
              {"ttgir", {"convert-triton-to-tritongpu", "tritongpu-coalesce", "canonicalize", "cse"}},
              {"llir", {"convert-triton-gpu-to-llvm", "cse"}},
              {"ptx", {}},
              {"cubin", {}}};
  p.skipped = {{"ttir", {"ttir"}}, {"ttgir", {"ttir", "ttgir"}}};
  return p;
}

PipelineEdit edit(EditOp op, std::string anchor, std::string pass = {}) {
  PipelineEdit e;
  e.op = op;
  e.scope = "triton-nvidia";
  e.anchor = std::move(anchor);
  e.pass = std::move(pass);
  e.origin = "config test.toml";
  return e;
}

TEST(TritonPipeline, StagesKeepTritonsNamesAndTheLastGivesTheBinary) {
  Result<PipelineSpec> spec = triton_pipeline_spec("triton-nvidia", nvidia_stages(), IrKind::cubin, {});
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_EQ(spec->stages.size(), 5u);
  EXPECT_EQ(spec->stages[1].name, "ttgir");
  EXPECT_EQ(spec->stages[1].passes[0], "convert-triton-to-tritongpu");
  EXPECT_EQ(spec->stages[0].takes, IrKind::triton);
  EXPECT_EQ(spec->stages[3].gives, IrKind::triton);
  EXPECT_EQ(spec->stages[4].gives, IrKind::cubin);
  EXPECT_EQ(vendor_of(*spec), Vendor::nvidia);
}

TEST(TritonPipeline, ABareAnchorActsOnItsFirstOccurrenceInAStageThatRuns) {
  // canonicalize is first in ttir, which a .ttir source skips: ttgir's is meant.
  Result<PipelineSpec> spec = triton_pipeline_spec(
      "triton-nvidia", nvidia_stages(), IrKind::cubin,
      {edit(EditOp::insert_after, "canonicalize", "tritongpu-plugin"), edit(EditOp::disable, "tritongpu-coalesce")});
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->stages[0].passes, (std::vector<std::string>{"inline", "canonicalize", "cse"}));
  EXPECT_EQ(spec->stages[1].passes,
            (std::vector<std::string>{"convert-triton-to-tritongpu", "canonicalize", "tritongpu-plugin", "cse"}));
}

TEST(TritonPipeline, AStageQualifiedAnchorActsInThatStage) {
  Result<PipelineSpec> spec =
      triton_pipeline_spec("triton-nvidia", nvidia_stages(), IrKind::cubin, {edit(EditOp::replace, "llir/cse", "symbol-dce")});
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->stages[1].passes.back(), "cse");
  EXPECT_EQ(spec->stages[2].passes, (std::vector<std::string>{"convert-triton-gpu-to-llvm", "symbol-dce"}));
}

TEST(TritonPipeline, AnAnchorOnlyInASkippedStageOrNowhereIsAnError) {
  Result<PipelineSpec> skipped =
      triton_pipeline_spec("triton-nvidia", nvidia_stages(), IrKind::cubin, {edit(EditOp::disable, "inline")});
  ASSERT_FALSE(skipped);
  EXPECT_EQ(skipped.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(skipped.error().message.find("config test.toml"), std::string::npos);
  EXPECT_FALSE(triton_pipeline_spec("triton-nvidia", nvidia_stages(), IrKind::cubin, {edit(EditOp::disable, "nope")}));
}

TEST(TritonPipeline, OverrideStageReplacesItsPasses) {
  PipelineEdit override_llir = edit(EditOp::override_stage, "");
  override_llir.stage = {"llir", IrKind::triton, IrKind::triton, {"convert-triton-gpu-to-llvm"}};
  Result<PipelineSpec> spec = triton_pipeline_spec("triton-nvidia", nvidia_stages(), IrKind::cubin, {override_llir});
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->stages[2].passes, (std::vector<std::string>{"convert-triton-gpu-to-llvm"}));
  override_llir.stage.name = "sass";
  EXPECT_FALSE(triton_pipeline_spec("triton-nvidia", nvidia_stages(), IrKind::cubin, {override_llir}));
}

TEST(TritonPipeline, EditsTravelAsTheWorkerTakesThem) {
  PipelineEdit override_llir = edit(EditOp::override_stage, "");
  override_llir.stage = {"llir", IrKind::triton, IrKind::triton, {"a", "b"}};
  const nlohmann::json list = nlohmann::json::parse(
      triton_edits_json({edit(EditOp::insert_before, "ttgir/cse", "tritongpu-plugin"), edit(EditOp::disable, "x"), override_llir}));
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["op"], "insert-before");
  EXPECT_EQ(list[0]["anchor"], "ttgir/cse");
  EXPECT_EQ(list[0]["pass"], "tritongpu-plugin");
  EXPECT_EQ(list[0]["origin"], "config test.toml");
  EXPECT_FALSE(list[1].contains("pass"));
  EXPECT_EQ(list[2]["op"], "override-stage");
  EXPECT_EQ(list[2]["stage"], "llir");
  EXPECT_EQ(list[2]["passes"], nlohmann::json::array({"a", "b"}));
}

TEST(TritonPipeline, PluginsCarryTheirDigestAndAMissingOneIsAnError) {
  const std::string path = (std::filesystem::temp_directory_path() / "kjit-triton-plugin-test.so").string();
  std::ofstream(path) << "plugin bytes";
  Result<std::string> plugins = triton_plugins_json({path});
  ASSERT_TRUE(plugins) << plugins.error().message;
  const nlohmann::json list = nlohmann::json::parse(*plugins);
  EXPECT_EQ(list[0]["path"], path);
  EXPECT_EQ(list[0]["sha256"], sha256_hex("plugin bytes"));
  std::filesystem::remove(path);
  Result<std::string> missing = triton_plugins_json({path});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::failed_precondition);
}

TEST(TritonPipeline, OnlyEditsScopedToATritonPipelineAreTritons) {
  EXPECT_TRUE(is_triton_edit(edit(EditOp::disable, "cse")));
  PipelineEdit other = edit(EditOp::disable, "cse");
  other.scope = "cuda-nvidia";
  EXPECT_FALSE(is_triton_edit(other));
  other.scope.clear();
  EXPECT_FALSE(is_triton_edit(other));
  EXPECT_EQ(triton_pass_of(PipelineSpec{"p", {}, {{"triton", IrKind::triton, IrKind::hsaco, {"triton-compile-amd"}}}, {}}),
            "triton-compile-amd");
}

TEST(TritonPipeline, ARequestsEditBecomesAnEditNamingItsIndex) {
  Result<PipelineEdit> insert = requested_triton_edit({"insert-after", "ttgir/canonicalize", "cse", "", {}}, 2);
  ASSERT_TRUE(insert) << insert.error().message;
  EXPECT_EQ(insert->op, EditOp::insert_after);
  EXPECT_EQ(insert->anchor, "ttgir/canonicalize");
  EXPECT_EQ(insert->pass, "cse");
  EXPECT_EQ(insert->origin, "request triton_edits[2]");
  Result<PipelineEdit> stage = requested_triton_edit({"override-stage", "", "", "ttgir", {"cse", "canonicalize"}}, 0);
  ASSERT_TRUE(stage) << stage.error().message;
  EXPECT_EQ(stage->stage.name, "ttgir");
  EXPECT_EQ(stage->stage.passes, (std::vector<std::string>{"cse", "canonicalize"}));
  const nlohmann::json list = nlohmann::json::parse(triton_edits_json({*insert, *stage}));
  EXPECT_EQ(list[0]["origin"], "request triton_edits[2]");
  EXPECT_EQ(list[1]["passes"], nlohmann::json::array({"cse", "canonicalize"}));
  EXPECT_TRUE(requested_triton_edit({"disable", "cse", "", "", {}}, 0));
}

TEST(TritonPipeline, AMalformedRequestEditIsTheCallersError) {
  const std::vector<std::pair<TritonEdit, std::string>> malformed = {
      {{"", "cse", "x", "", {}}, "no op"},
      {{"insert-in-the-middle", "cse", "x", "", {}}, "an unknown op"},
      {{"override-pipeline", "", "", "", {}}, "override-pipeline"},
      {{"insert-after", "", "cse", "", {}}, "no anchor"},
      {{"insert-after", "cse", "", "", {}}, "no pass"},
      {{"replace", "cse", "bad name", "", {}}, "a pass name with a space"},
      {{"disable", "ttgir/", "", "", {}}, "an anchor with an empty pass"},
      {{"disable", "a/b/c", "", "", {}}, "an anchor with two slashes"},
      {{"disable", "cse", "canonicalize", "", {}}, "disable with a pass"},
      {{"disable", "cse", "", "ttgir", {}}, "disable with a stage"},
      {{"override-stage", "cse", "", "ttgir", {"cse"}}, "override-stage with an anchor"},
      {{"override-stage", "", "", "", {"cse"}}, "override-stage without a stage"},
      {{"override-stage", "", "", "ttgir", {"cse", ""}}, "an empty pass in override-stage"},
      {{"insert-before", std::string(200, 'a'), "cse", "", {}}, "a climbing name"},
  };
  for (const auto& [edit, what] : malformed) {
    Result<PipelineEdit> checked = requested_triton_edit(edit, 4);
    ASSERT_FALSE(checked) << what;
    EXPECT_EQ(checked.error().code, ErrorCode::invalid_argument) << what;
    EXPECT_NE(checked.error().message.find("triton_edits[4]"), std::string::npos) << checked.error().message;
  }
}

}  // namespace
}  // namespace kjit
