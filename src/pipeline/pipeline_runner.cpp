#include "pipeline/pipeline_runner.h"

#include <chrono>

namespace kjit {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::map<std::string, std::string> args_of(const std::map<std::string, std::string>& all, const std::string& pass) {
  std::map<std::string, std::string> out;
  std::string prefix = pass + ".";
  for (const auto& [key, value] : all)
    if (key.starts_with(prefix)) out[key.substr(prefix.size())] = value;
  return out;
}

}  // namespace

Result<PipelineRun> run_pipeline(const PipelineSpec& pipeline, const PassRegistry& registry, PassContext context,
                                 const std::map<std::string, std::string>& args, std::string input, IrKind input_kind,
                                 bool stop_at_ptx) {
  PipelineRun run;
  run.ir = std::move(input);
  run.kind = input_kind;
  for (const StageSpec& stage : pipeline.stages) {
    if (stop_at_ptx && run.kind == IrKind::ptx && stage.gives != IrKind::ptx) break;
    std::string where = "stage '" + stage.name + "' of pipeline '" + pipeline.name + "'";
    if (stage.takes != run.kind) {
      return make_error(ErrorCode::failed_precondition, where + " takes " + std::string(to_string(stage.takes)) +
                                                            " but the IR is " + std::string(to_string(run.kind)));
    }
    auto stage_start = std::chrono::steady_clock::now();
    StageTiming timing{stage.name, 0, {}};
    for (const std::string& pass_name : stage.passes) {
      const PassImpl* pass = registry.find(pass_name);
      if (!pass) return make_error(ErrorCode::failed_precondition, where + " names pass '" + pass_name + "', which no one registered");
      if (pass->takes != run.kind) {
        return make_error(ErrorCode::failed_precondition, "pass '" + pass_name + "' in " + where + " takes " +
                                                              std::string(to_string(pass->takes)) + " but the IR is " +
                                                              std::string(to_string(run.kind)));
      }
      context.args = args_of(args, pass_name);
      auto pass_start = std::chrono::steady_clock::now();
      Result<PassOutput> out = pass->run(context, run.ir);
      timing.passes.push_back({pass_name, ms_since(pass_start)});
      if (!out) {
        Error error = out.error();
        error.message = stage.name + "/" + pass_name + ": " + error.message;
        if (!run.log.empty()) error.log = run.log + error.log;
        return error;
      }
      if (!out->log.empty()) {
        run.log += "[" + stage.name + "/" + pass_name + "]\n" + out->log;
        if (run.log.back() != '\n') run.log += '\n';
      }
      run.ir = std::move(out->ir);
      run.kind = pass->gives;
    }
    if (run.kind != stage.gives) {
      return make_error(ErrorCode::failed_precondition, where + " should give " + std::string(to_string(stage.gives)) +
                                                            " but its passes gave " + std::string(to_string(run.kind)));
    }
    timing.ms = ms_since(stage_start);
    run.stages.push_back(std::move(timing));
  }
  return run;
}

}  // namespace kjit
