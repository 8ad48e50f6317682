#include "pipeline/triton_request_edit.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace kjit {
namespace {

// MLIR pass and Triton stage names: "tritongpu-coalesce", "ttgir".
constexpr size_t k_max_name_bytes = 128;

bool is_pass_name(std::string_view name) {
  return !name.empty() && name.size() <= k_max_name_bytes && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// A request's text in a message, cut short: it may be anything.
std::string shown(std::string_view text) {
  constexpr size_t k_shown = 80;
  return "'" + std::string(text.substr(0, k_shown)) + (text.size() > k_shown ? "...'" : "'");
}

// "canonicalize", or "ttgir/canonicalize": that stage's first one.
bool is_anchor(std::string_view anchor) {
  const size_t slash = anchor.find('/');
  if (slash == std::string_view::npos) return is_pass_name(anchor);
  return is_pass_name(anchor.substr(0, slash)) && is_pass_name(anchor.substr(slash + 1));
}

}  // namespace

Result<PipelineEdit> requested_triton_edit(const TritonEdit& edit, size_t index) {
  const std::string where = "triton_edits[" + std::to_string(index) + "]";
  auto invalid = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, where + ": " + why); };
  std::optional<EditOp> op = parse_edit_op(edit.op);
  if (!op || *op == EditOp::override_pipeline)
    return invalid("op " + shown(edit.op) + " is not insert-before, insert-after, disable, replace or override-stage" +
                   (op ? " (Triton's pipeline cannot be overridden whole)" : ""));
  PipelineEdit out;
  out.op = *op;
  out.origin = "request " + where;
  if (*op == EditOp::override_stage) {
    if (!edit.anchor.empty() || !edit.pass.empty())
      return invalid("override-stage takes a stage and passes, no anchor or pass");
    if (!is_pass_name(edit.stage))
      return invalid("override-stage needs a stage name such as 'ttgir', not " + shown(edit.stage));
    for (const std::string& pass : edit.passes)
      if (!is_pass_name(pass)) return invalid(shown(pass) + " is not an MLIR pass name");
    out.stage.name = edit.stage;
    out.stage.passes = edit.passes;
    return out;
  }
  if (!edit.stage.empty() || !edit.passes.empty())
    return invalid(std::string(to_string(*op)) + " takes an anchor" + (*op == EditOp::disable ? "" : " and a pass") +
                   ", not a stage or passes");
  if (!is_anchor(edit.anchor))
    return invalid(std::string(to_string(*op)) +
                   " needs an anchor pass ('canonicalize' or 'ttgir/canonicalize'), not " + shown(edit.anchor));
  out.anchor = edit.anchor;
  if (*op == EditOp::disable) {
    if (!edit.pass.empty()) return invalid("disable takes an anchor only, not a pass");
    return out;
  }
  if (!is_pass_name(edit.pass))
    return invalid(std::string(to_string(*op)) + " needs the name of the pass it adds, not " + shown(edit.pass));
  out.pass = edit.pass;
  return out;
}

}  // namespace kjit
