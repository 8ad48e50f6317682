// The pipeline runner with fake passes, no toolchain: passes run in stage
// order with their own arguments, every stage is timed, each pass's log is
// labelled, IR kinds are checked between passes, a failing pass names its
// stage, and stop_at_ptx ends the run at the last PTX.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/pipeline_runner.h"

namespace kjit {
namespace {

// A pass that appends its name (and its "tag" argument, when given) to the IR.
PassImpl appending(std::string name, IrKind takes, IrKind gives) {
  PassImpl pass;
  pass.name = name;
  pass.version = "1";
  pass.takes = takes;
  pass.gives = gives;
  pass.arg_keys = {"tag"};
  pass.declares_key = declares_nothing;
  pass.run = [name](PassContext& context, std::string_view ir) -> Result<PassOutput> {
    std::string out(ir);
    out += "|" + name;
    if (auto tag = context.args.find("tag"); tag != context.args.end()) out += "=" + tag->second;
    return PassOutput{out, name + " ran"};
  };
  return pass;
}

class PipelineRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.add(appending("front", IrKind::cuda_source, IrKind::ptx)));
    ASSERT_TRUE(registry_.add(appending("polish", IrKind::ptx, IrKind::ptx)));
    ASSERT_TRUE(registry_.add(appending("assemble", IrKind::ptx, IrKind::cubin)));
    PassImpl failing = appending("refuse", IrKind::ptx, IrKind::ptx);
    failing.run = [](PassContext&, std::string_view) -> Result<PassOutput> {
      return make_error(ErrorCode::invalid_argument, "refused on purpose", "the refusing pass's log");
    };
    ASSERT_TRUE(registry_.add(failing));
    pipeline_.name = "fake";
    pipeline_.stages = {{"to-ptx", IrKind::cuda_source, IrKind::ptx, {"front", "polish"}},
                        {"to-cubin", IrKind::ptx, IrKind::cubin, {"assemble"}}};
  }
  Result<PipelineRun> run(const PipelineSpec& pipeline, const std::map<std::string, std::string>& args = {},
                          bool stop_at_ptx = false) {
    PassContext context{job_, *toolkit_, {}, lowered_names_, {}, {}};
    return run_pipeline(pipeline, registry_, context, args, "src", IrKind::cuda_source, stop_at_ptx);
  }

  PassRegistry registry_;
  PipelineSpec pipeline_;
  CompileJob job_;
  std::shared_ptr<const CudaToolkit> toolkit_ = CudaToolkit::load("/nonexistent-toolkit");
  std::map<std::string, std::string> lowered_names_;
};

TEST_F(PipelineRunnerTest, PassesRunInStageOrderWithTheirOwnArguments) {
  auto r = run(pipeline_, {{"polish.tag", "p"}, {"assemble.tag", "a"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ir, "src|front|polish=p|assemble=a");
  EXPECT_EQ(r->kind, IrKind::cubin);
  ASSERT_EQ(r->stages.size(), 2u);
  EXPECT_EQ(r->stages[0].stage, "to-ptx");
  EXPECT_EQ(r->stages[1].stage, "to-cubin");
  ASSERT_EQ(r->stages[0].passes.size(), 2u);  // each pass timed on its own
  EXPECT_NE(r->log.find("front ran"), std::string::npos) << r->log;
  EXPECT_NE(r->log.find("assemble ran"), std::string::npos) << r->log;
}

TEST_F(PipelineRunnerTest, StopAtPtxEndsAtTheLastPtx) {
  auto r = run(pipeline_, {}, /*stop_at_ptx=*/true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ir, "src|front|polish");
  EXPECT_EQ(r->kind, IrKind::ptx);
}

TEST_F(PipelineRunnerTest, AFailingPassNamesItsStageAndKeepsItsLog) {
  PipelineSpec failing = pipeline_;
  failing.stages[0].passes = {"front", "refuse", "polish"};
  auto r = run(failing);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("to-ptx"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("refuse"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().log.find("the refusing pass's log"), std::string::npos) << r.error().log;
}

TEST_F(PipelineRunnerTest, APassThatTakesAnotherIrKindIsRefused) {
  PipelineSpec mismatched = pipeline_;
  mismatched.stages[1].passes = {"front"};  // takes CUDA C++, given PTX
  auto r = run(mismatched);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("front"), std::string::npos) << r.error().message;
}

TEST_F(PipelineRunnerTest, AnUnknownPassIsAnError) {
  PipelineSpec unknown = pipeline_;
  unknown.stages[0].passes.push_back("no-such-pass");
  auto r = run(unknown);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no-such-pass"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace kjit
