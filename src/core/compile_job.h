// A validated compile request, as the pipeline sees it: no proto, no gRPC.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kjit/types.h"
#include "target/target.h"

namespace kjit {

struct CompileJob {
  InputKind input_kind = InputKind::cuda_source;
  std::string input;                          // source text or IR bytes
  std::string input_name = "input";           // shown in compiler logs
  Target target;
  std::vector<std::string> options;           // already checked against the allowlist
  std::map<std::string, std::string> headers; // include name -> content
  std::vector<std::string> name_expressions;  // e.g. "scale<float>"
  ArtifactKind wanted = ArtifactKind::cubin;
  std::string pipeline;                       // a named pipeline; empty: the default for the input
  std::map<std::string, std::string> pass_args;  // "pass.key" -> value
  // When the toolkit cannot build a cubin for the target (sm_107 with CUDA
  // 13.0), answer with the PTX for the driver to JIT instead of an error.
  bool allow_ptx_fallback = false;
  // Triton input: the Triton build it is compiled with, as resolved by the
  // daemon ("triton-3.9.0"); its Triton options are in `options` as
  // "name=value".
  std::string triton_build;
  // Triton input: the request's own edits to the build's stages.
  std::vector<TritonEdit> triton_edits;
  // Triton input: the build's plugins switched off for this kernel, by the
  // names `kjit toolkits` gives them ("triton-utlx", a library's path;
  // "*": all), sorted, each once.
  std::vector<std::string> triton_plugins_off;
  bool operator==(const CompileJob&) const = default;
};

// Every field of a CompileJob, each named once, for code that must treat
// them all alike: the plan memo's fingerprint, and the test that each field
// reaches the cache key (tests/unit/pipeline/compile_key_fields_test.cpp,
// whose size check fails when a field is added here or to the struct alone).
// `visit(name, field)` is called in declaration order.
template <typename Job, typename Visit>
void for_each_field(Job& job, Visit&& visit) {
  visit("input_kind", job.input_kind);
  visit("input", job.input);
  visit("input_name", job.input_name);
  visit("target", job.target);
  visit("options", job.options);
  visit("headers", job.headers);
  visit("name_expressions", job.name_expressions);
  visit("wanted", job.wanted);
  visit("pipeline", job.pipeline);
  visit("pass_args", job.pass_args);
  visit("allow_ptx_fallback", job.allow_ptx_fallback);
  visit("triton_build", job.triton_build);
  visit("triton_edits", job.triton_edits);
  visit("triton_plugins_off", job.triton_plugins_off);
}

}  // namespace kjit
