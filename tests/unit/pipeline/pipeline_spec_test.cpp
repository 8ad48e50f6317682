#include <gtest/gtest.h>

#include <toml++/toml.h>

#include "pipeline/default_pipelines.h"
#include "pipeline/pipeline_spec.h"
#include "pipeline/pipeline_toml.h"

namespace kjit {
namespace {

PipelineSpec llvm_default() { return *default_pipeline_for(InputKind::llvm_ir); }

std::vector<std::string> all_passes(const PipelineSpec& p) {
  std::vector<std::string> out;
  for (const StageSpec& s : p.stages) out.insert(out.end(), s.passes.begin(), s.passes.end());
  return out;
}

PipelineEdit edit(EditOp op, std::string anchor, std::string pass = {}) {
  PipelineEdit e;
  e.op = op;
  e.anchor = std::move(anchor);
  e.pass = std::move(pass);
  e.origin = "test";
  return e;
}

TEST(DefaultPipelines, EachInputKindHasOneReadableDefault) {
  EXPECT_EQ(default_pipeline_for(InputKind::cuda_source)->name, "cuda-nvidia");
  EXPECT_EQ(default_pipeline_for(InputKind::ptx)->name, "ptx-nvidia");
  EXPECT_EQ(default_pipeline_for(InputKind::llvm_ir)->name, "llvm-nvidia");
  EXPECT_EQ(default_pipeline_for(InputKind::llvm_bitcode)->name, "llvm-nvidia");
  EXPECT_EQ(default_pipeline_for(InputKind::hip_source), nullptr);
  EXPECT_EQ(all_passes(llvm_default()),
            (std::vector<std::string>{"libdevice-link", "nvvm-reflect", "llvm-passes", "nvptx-codegen", "ptx-retarget",
                                      "nvjitlink-link"}));
}

TEST(PipelineEdits, InsertBeforeAndAfterPlaceThePassNextToTheAnchor) {
  PipelineSpec p = llvm_default();
  ASSERT_TRUE(apply_edit(p, edit(EditOp::insert_after, "nvptx-codegen", "mine")));
  ASSERT_TRUE(apply_edit(p, edit(EditOp::insert_before, "llvm-passes", "first")));
  EXPECT_EQ(all_passes(p), (std::vector<std::string>{"libdevice-link", "nvvm-reflect", "first", "llvm-passes",
                                                      "nvptx-codegen", "mine", "ptx-retarget", "nvjitlink-link"}));
  EXPECT_EQ(p.stages[1].passes, (std::vector<std::string>{"nvptx-codegen", "mine"}));
}

TEST(PipelineEdits, DisableAndReplace) {
  PipelineSpec p = llvm_default();
  ASSERT_TRUE(apply_edit(p, edit(EditOp::disable, "llvm-passes")));
  ASSERT_TRUE(apply_edit(p, edit(EditOp::replace, "ptx-retarget", "other-retarget")));
  EXPECT_EQ(all_passes(p), (std::vector<std::string>{"libdevice-link", "nvvm-reflect", "nvptx-codegen", "other-retarget",
                                                      "nvjitlink-link"}));
}

TEST(PipelineEdits, OverrideStageAndPipeline) {
  PipelineSpec p = llvm_default();
  PipelineEdit stage = edit(EditOp::override_stage, "");
  stage.stage = {"ptx", IrKind::ptx, IrKind::ptx, {"a", "b"}};
  ASSERT_TRUE(apply_edit(p, stage));
  EXPECT_EQ(p.stages[2].passes, (std::vector<std::string>{"a", "b"}));
  stage.stage.name = "no-such-stage";
  auto s = apply_edit(p, stage);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("no-such-stage"), std::string::npos);

  PipelineEdit whole = edit(EditOp::override_pipeline, "");
  whole.pipeline.stages = {{"only", IrKind::llvm, IrKind::ptx, {"nvptx-codegen"}}};
  ASSERT_TRUE(apply_edit(p, whole));
  EXPECT_EQ(p.name, "llvm-nvidia");
  EXPECT_EQ(all_passes(p), (std::vector<std::string>{"nvptx-codegen"}));
}

TEST(PipelineEdits, MissingAnchorIsAnErrorNamingOriginAndPass) {
  PipelineSpec p = llvm_default();
  auto s = apply_edit(p, edit(EditOp::disable, "no-such-pass"));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(s.error().message.find("no-such-pass"), std::string::npos);
  EXPECT_NE(s.error().message.find("test"), std::string::npos);
}

TEST(PipelineToml, PrintedPipelineReadsBackEqual) {
  for (const PipelineSpec& p : default_pipelines()) {
    std::string text = pipeline_to_toml(p);
    PipelineConfig config;
    ASSERT_TRUE(read_pipeline_config(toml::parse(text), "printed", config)) << text;
    ASSERT_EQ(config.pipelines.size(), 1u);
    EXPECT_EQ(config.pipelines[0], p) << text;
  }
}

// Names that TOML can only write with escapes still read back: one that
// starts with a newline was written as a multi-line string, whose first
// newline a reader drops.
TEST(PipelineToml, NamesWithControlCharactersAndQuotesReadBackEqual) {
  PipelineSpec p;
  p.name = "odd \"name\".with dots";
  p.stages = {StageSpec{"codegen", IrKind::llvm, IrKind::ptx, {"\nvptx-codegen", "tab\there", "quote'\"s", "\\back"}}};
  const std::string text = pipeline_to_toml(p);
  PipelineConfig config;
  ASSERT_TRUE(read_pipeline_config(toml::parse(text), "printed", config)) << text;
  ASSERT_EQ(config.pipelines.size(), 1u);
  EXPECT_EQ(config.pipelines[0], p) << text;
}

TEST(PipelineToml, EditsAndErrorsNameTheKey) {
  PipelineConfig config;
  auto ok = read_pipeline_config(toml::parse(R"(
[[edits]]
op = "insert-after"
anchor = "nvptx-codegen"
pass = "mine"
pipeline = "fast"
[[edits]]
op = "override-stage"
stage = { name = "ptx", takes = "ptx", gives = "ptx", passes = ["x"] }
)"),
                                 "t.toml", config);
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(config.edits.size(), 2u);
  EXPECT_EQ(config.edits[0].op, EditOp::insert_after);
  EXPECT_EQ(config.edits[0].scope, "fast");
  EXPECT_EQ(config.edits[1].stage.passes, std::vector<std::string>{"x"});

  PipelineConfig bad;
  auto s = read_pipeline_config(toml::parse("[[edits]]\nop = \"explode\"\nanchor = \"x\"\n"), "t.toml", bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("explode"), std::string::npos);
  s = read_pipeline_config(toml::parse("[pipelines.p]\nstages = [{name = \"s\", takes = \"wat\", gives = \"ptx\"}]\n"),
                           "t.toml", bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("wat"), std::string::npos);
  s = read_pipeline_config(toml::parse("[pipelines.p]\ncolour = \"red\"\n"), "t.toml", bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("colour"), std::string::npos);
}

}  // namespace
}  // namespace kjit
