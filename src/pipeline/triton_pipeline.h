// Triton's pipeline seen from kjit's: the edits the configuration makes to
// Triton's own stages (scoped to triton-nvidia or triton-amd, anchored on
// MLIR pass names the build's worker resolves), the pass plugin libraries
// the daemon loads into every build, and the Triton stages shown as a kjit
// pipeline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/triton/triton_compile.h"
#include "pipeline/pipeline_spec.h"

namespace kjit {

// The pass arguments (of triton-compile, triton-compile-amd) the plan sets
// from the configuration; a request cannot.
inline constexpr std::string_view k_triton_edits_arg = "edits";
inline constexpr std::string_view k_triton_plugins_arg = "plugins";

// The pass of `pipeline` that runs a Triton build's pipeline, or "".
std::string triton_pass_of(const PipelineSpec& pipeline);

// True for an edit that acts on Triton's stages: scoped to a pipeline that
// takes Triton IR.
bool is_triton_edit(const PipelineEdit& edit);

// The edits as the worker script takes them (a JSON list).
std::string triton_edits_json(const std::vector<PipelineEdit>& edits);

// The plugin libraries with their digests, as a JSON list of {path, sha256}:
// a plugin's bytes are in the key of every Triton compile. A path that is
// not a readable file is failed_precondition.
Result<std::string> triton_plugins_json(const std::vector<std::string>& paths);

// Triton's stages as a kjit pipeline named `name` (for `kjit pipeline show`),
// the edits applied as the worker applies them for a .ttir source: an
// anchor "STAGE/PASS" or the first PASS in a stage that runs.
Result<PipelineSpec> triton_pipeline_spec(const std::string& name, const TritonPipeline& stages, IrKind gives,
                                          const std::vector<PipelineEdit>& edits);

}  // namespace kjit
