#include "pipeline/triton_pipeline.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/input_kinds.h"
#include "pipeline/cache_key.h"
#include "pipeline/default_pipelines.h"

namespace kjit {
namespace {

using nlohmann::json;

bool takes_triton(const std::string& pipeline_name) {
  for (const PipelineSpec& p : default_pipelines())
    if (p.name == pipeline_name)
      return std::find(p.inputs.begin(), p.inputs.end(), InputKind::triton) != p.inputs.end();
  return false;
}

}  // namespace

std::string triton_pass_of(const PipelineSpec& pipeline) {
  for (const char* pass : {"triton-compile", "triton-compile-amd"})
    if (has_pass(pipeline, pass)) return pass;
  return {};
}

bool is_triton_edit(const PipelineEdit& edit) { return !edit.scope.empty() && takes_triton(edit.scope); }

std::string triton_edits_json(const std::vector<PipelineEdit>& edits) {
  json list = json::array();
  for (const PipelineEdit& edit : edits) {
    json entry = {{"op", std::string(to_string(edit.op))}, {"origin", edit.origin}};
    if (edit.op == EditOp::override_stage) {
      entry["stage"] = edit.stage.name;
      entry["passes"] = edit.stage.passes;
    } else {
      entry["anchor"] = edit.anchor;
      if (edit.op != EditOp::disable) entry["pass"] = edit.pass;
    }
    list.push_back(std::move(entry));
  }
  return list.dump();
}

Result<std::string> triton_plugins_json(const std::vector<std::string>& paths) {
  json list = json::array();
  for (const std::string& path : paths) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
      return make_error(ErrorCode::failed_precondition, "triton.plugins: cannot read '" + path + "'");
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    list.push_back({{"path", path}, {"sha256", sha256_hex(bytes)}});
  }
  return list.dump();
}

Result<PipelineSpec> triton_pipeline_spec(const std::string& name, const TritonPipeline& triton, IrKind gives,
                                          const std::vector<PipelineEdit>& edits) {
  PipelineSpec spec;
  spec.name = name;
  spec.inputs = {InputKind::triton};
  for (size_t i = 0; i < triton.stages.size(); ++i) {
    const bool last = i + 1 == triton.stages.size();
    spec.stages.push_back({triton.stages[i].name, IrKind::triton, last ? gives : IrKind::triton, triton.stages[i].passes});
  }
  const auto skipped_it = triton.skipped.find("ttir");
  const std::vector<std::string> skipped = skipped_it == triton.skipped.end() ? std::vector<std::string>{} : skipped_it->second;
  auto runs = [&](const StageSpec& stage) { return std::find(skipped.begin(), skipped.end(), stage.name) == skipped.end(); };
  for (const PipelineEdit& edit : edits) {
    if (edit.op == EditOp::override_stage) {
      auto stage = std::find_if(spec.stages.begin(), spec.stages.end(), [&](const StageSpec& s) { return s.name == edit.stage.name; });
      if (stage == spec.stages.end())
        return make_error(ErrorCode::failed_precondition, "override-stage from " + edit.origin + " names stage '" +
                                                              edit.stage.name + "', which " + name + " does not have");
      stage->passes = edit.stage.passes;
      continue;
    }
    std::string anchor = edit.anchor, in_stage;
    if (const size_t slash = anchor.find('/'); slash != std::string::npos) {
      in_stage = anchor.substr(0, slash);
      anchor = anchor.substr(slash + 1);
    }
    bool applied = false;
    for (StageSpec& stage : spec.stages) {
      if (!runs(stage) || (!in_stage.empty() && stage.name != in_stage)) continue;
      auto it = std::find(stage.passes.begin(), stage.passes.end(), anchor);
      if (it == stage.passes.end()) continue;
      edit_passes_at(stage.passes, it, edit);
      applied = true;
      break;
    }
    if (!applied)
      return make_error(ErrorCode::failed_precondition,
                        std::string(to_string(edit.op)) + " from " + edit.origin + " names anchor '" + edit.anchor +
                            "', which no stage of " + name + " that runs for a .ttir source has");
  }
  return spec;
}

}  // namespace kjit
