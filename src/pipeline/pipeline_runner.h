// Runs an effective pipeline: every stage, every pass in order, each timed,
// each checked for the IR kind it takes and gives.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pass.h"

namespace kjit {

struct PipelineRun {
  IrKind kind = IrKind::cubin;  // of `ir`
  std::string ir;
  std::vector<StageTiming> stages;  // what ran
  std::string log;                  // each pass's log, labelled
};

// `args` holds "pass.key" -> value for every pass (defaults merged with the
// request). With stop_at_ptx the run ends at the last point the IR is PTX.
// A pass error comes back with the stage and pass named in its message.
Result<PipelineRun> run_pipeline(const PipelineSpec& pipeline, const PassRegistry& registry, PassContext context,
                                 const std::map<std::string, std::string>& args, std::string input, IrKind input_kind,
                                 bool stop_at_ptx);

}  // namespace kjit
