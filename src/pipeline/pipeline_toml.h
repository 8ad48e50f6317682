// Pipelines and edits in TOML: read from the daemon's configuration, and
// printed (`kjit pipeline show`) in the same syntax, so what is shown can be
// pasted back into a configuration.
//
//   [pipelines.fast-llvm]
//   inputs = ["llvm-ir", "llvm-bitcode"]
//   args = { "llvm-passes.pipeline" = "default<O1>" }
//   [[pipelines.fast-llvm.stages]]
//   name = "llvm-opt"
//   takes = "llvm"
//   gives = "llvm"
//   passes = ["llvm-passes"]
//
//   [[edits]]
//   op = "insert-after"        # insert-before, disable, replace, override-stage
//   anchor = "nvptx-codegen"
//   pass = "my-ptx-pass"
//   pipeline = "fast-llvm"     # optional: only requests selecting it
#pragma once

#include <string>

#include "pipeline/pipeline_spec.h"

namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace kjit {

// Reads `pipelines` and `edits` from a parsed configuration; other keys are
// the caller's. `source` names the file in messages.
Status read_pipeline_config(const toml::table& root, const std::string& source, PipelineConfig& config);

// One pipeline as a [pipelines.NAME] table.
std::string pipeline_to_toml(const PipelineSpec& pipeline);

}  // namespace kjit
