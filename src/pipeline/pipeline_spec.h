// Pipelines as data: an ordered list of named stages, each turning one IR
// kind into another through an ordered list of named passes; and the named
// edits that plugins and the configuration make to them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"
#include "target/target.h"

namespace kjit {

// What flows between passes. "llvm" is LLVM IR as text or bitcode;
// "amdgcn-object" an AMDGPU relocatable object, which a link makes a code
// object ("hsaco"); "tileir" Tile IR bytecode, which tileiras assembles into
// a cubin; "triton" Triton IR (TTIR, TTGIR, Gluon's), which a Triton
// build's own pipeline lowers to a cubin or a code object.
enum class IrKind { cuda_source, ptx, llvm, cubin, hip_source, amdgcn_object, hsaco, tileir, triton };
std::string_view to_string(IrKind kind);
std::optional<IrKind> parse_ir_kind(std::string_view text);
IrKind ir_kind_of(InputKind input);


struct StageSpec {
  std::string name;
  IrKind takes = IrKind::ptx;
  IrKind gives = IrKind::cubin;
  std::vector<std::string> passes;
  bool operator==(const StageSpec&) const = default;
};

struct PipelineSpec {
  std::string name;
  std::vector<InputKind> inputs;            // the inputs this pipeline serves
  std::vector<StageSpec> stages;
  std::map<std::string, std::string> args;  // "pass.key" -> default value
  bool operator==(const PipelineSpec&) const = default;
};

enum class EditOp { insert_before, insert_after, disable, replace, override_stage, override_pipeline };
std::string_view to_string(EditOp op);
std::optional<EditOp> parse_edit_op(std::string_view text);

struct PipelineEdit {
  EditOp op = EditOp::insert_after;
  std::string scope;   // empty: every request; else only requests selecting this pipeline
  std::string anchor;  // the pass an insert / disable / replace names
  std::string pass;    // the pass inserted, or the replacement
  StageSpec stage;     // override_stage: replaces the stage of the same name
  PipelineSpec pipeline;  // override_pipeline: the whole pipeline (name = scope)
  std::string origin;  // "config" or the plugin's name, for messages and the key
};

// Named pipelines and edits from the daemon configuration.
struct PipelineConfig {
  std::vector<PipelineSpec> pipelines;
  std::vector<PipelineEdit> edits;
};

// Applies one edit. An anchor missing from the pipeline is
// failed_precondition naming the edit's origin.
Status apply_edit(PipelineSpec& pipeline, const PipelineEdit& edit);

// Applies an insert, disable or replace edit at `anchor`, a position in
// `passes` holding the edit's anchor pass.
void edit_passes_at(std::vector<std::string>& passes, std::vector<std::string>::iterator anchor,
                    const PipelineEdit& edit);

// Whose GPUs a pipeline builds for, from what its last stage gives: cubin or
// PTX for NVIDIA, a code object for AMD; nullopt for a pipeline that ends
// elsewhere (or has no stages).
std::optional<Vendor> vendor_of(const PipelineSpec& pipeline);

// True when the pipeline has a pass of that name in any stage.
bool has_pass(const PipelineSpec& pipeline, std::string_view pass);

}  // namespace kjit
