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
  bool operator==(const CompileJob&) const = default;
};

}  // namespace kjit
