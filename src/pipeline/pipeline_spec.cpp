#include "pipeline/pipeline_spec.h"

#include <algorithm>
#include <array>

#include "core/input_kinds.h"

namespace kjit {
namespace {

constexpr std::array<std::pair<IrKind, std::string_view>, 9> k_ir_kinds{{
    {IrKind::cuda_source, "cuda-source"},
    {IrKind::ptx, "ptx"},
    {IrKind::llvm, "llvm"},
    {IrKind::cubin, "cubin"},
    {IrKind::hip_source, "hip-source"},
    {IrKind::amdgcn_object, "amdgcn-object"},
    {IrKind::hsaco, "hsaco"},
    {IrKind::tileir, "tileir"},
    {IrKind::triton, "triton"},
}};

constexpr std::array<std::pair<EditOp, std::string_view>, 6> k_edit_ops{{
    {EditOp::insert_before, "insert-before"},
    {EditOp::insert_after, "insert-after"},
    {EditOp::disable, "disable"},
    {EditOp::replace, "replace"},
    {EditOp::override_stage, "override-stage"},
    {EditOp::override_pipeline, "override-pipeline"},
}};

Error missing_anchor(const PipelineSpec& pipeline, const PipelineEdit& edit) {
  return make_error(ErrorCode::failed_precondition, "edit '" + std::string(to_string(edit.op)) + " " + edit.anchor +
                                                        "' from " + edit.origin + " names pass '" + edit.anchor +
                                                        "', which pipeline '" + pipeline.name + "' does not have");
}

}  // namespace

std::string_view to_string(IrKind kind) {
  for (auto [k, name] : k_ir_kinds)
    if (k == kind) return name;
  return "unknown";
}

std::optional<IrKind> parse_ir_kind(std::string_view text) {
  for (auto [k, name] : k_ir_kinds)
    if (name == text) return k;
  return std::nullopt;
}

IrKind ir_kind_of(InputKind input) {
  // Every row's IR parses (InputKinds.EveryRowsIrParses).
  return parse_ir_kind(input_kind_info(input).ir).value_or(IrKind::cuda_source);
}

std::string_view to_string(EditOp op) {
  for (auto [o, name] : k_edit_ops)
    if (o == op) return name;
  return "unknown";
}

std::optional<EditOp> parse_edit_op(std::string_view text) {
  for (auto [o, name] : k_edit_ops)
    if (name == text) return o;
  return std::nullopt;
}

std::optional<Vendor> vendor_of(const PipelineSpec& pipeline) {
  if (pipeline.stages.empty()) return std::nullopt;
  switch (pipeline.stages.back().gives) {
    case IrKind::cubin:
    case IrKind::ptx: return Vendor::nvidia;
    case IrKind::hsaco: return Vendor::amd;
    default: return std::nullopt;
  }
}

bool has_pass(const PipelineSpec& pipeline, std::string_view pass) {
  for (const StageSpec& stage : pipeline.stages)
    if (std::find(stage.passes.begin(), stage.passes.end(), pass) != stage.passes.end()) return true;
  return false;
}

void edit_passes_at(std::vector<std::string>& passes, std::vector<std::string>::iterator anchor,
                    const PipelineEdit& edit) {
  switch (edit.op) {
    case EditOp::insert_before: passes.insert(anchor, edit.pass); break;
    case EditOp::insert_after: passes.insert(anchor + 1, edit.pass); break;
    case EditOp::disable: passes.erase(anchor); break;
    case EditOp::replace: *anchor = edit.pass; break;
    default: break;
  }
}

Status apply_edit(PipelineSpec& pipeline, const PipelineEdit& edit) {
  switch (edit.op) {
    case EditOp::override_pipeline: {
      std::string name = pipeline.name;
      pipeline = edit.pipeline;
      if (pipeline.name.empty()) pipeline.name = name;
      return Ok{};
    }
    case EditOp::override_stage: {
      for (StageSpec& stage : pipeline.stages) {
        if (stage.name == edit.stage.name) {
          stage = edit.stage;
          return Ok{};
        }
      }
      return make_error(ErrorCode::failed_precondition, "override-stage from " + edit.origin + " names stage '" +
                                                            edit.stage.name + "', which pipeline '" + pipeline.name +
                                                            "' does not have");
    }
    default:
      break;
  }
  for (StageSpec& stage : pipeline.stages) {
    auto it = std::find(stage.passes.begin(), stage.passes.end(), edit.anchor);
    if (it == stage.passes.end()) continue;
    edit_passes_at(stage.passes, it, edit);
    return Ok{};
  }
  return missing_anchor(pipeline, edit);
}

}  // namespace kjit
