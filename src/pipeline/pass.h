// A pass: IR bytes of one kind in, IR bytes (maybe of another kind) out, with
// a log. Built-in passes wrap NVRTC, nvJitLink and LLVM; plugins add more.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "core/compile_job.h"
#include "pipeline/cache_key.h"
#include "pipeline/pipeline_spec.h"

namespace kjit {

struct PassContext {
  const CompileJob& job;
  const CudaToolkit& toolkit;
  std::map<std::string, std::string> args;           // this pass's arguments: key -> value
  std::map<std::string, std::string>& lowered_names;  // filled by nvrtc-compile
  std::vector<std::string> llvm_pass_plugins;        // paths, for llvm-passes
  // The caller's compile namespace (empty: the default one, or unknown),
  // for what a process keeps across compiles: a compile worker's PCHs of
  // the request's own headers are kept per namespace (header_set.h). Never
  // in the key: no pass's output may depend on it.
  std::string_view caller_namespace;
  // Where a pass that runs Triton's pipeline leaves the metadata Triton
  // wrote beside the binary (the artifact's triton_metadata); null where
  // nobody reads it.
  std::string* triton_metadata = nullptr;
  // And its intermediate files, by extension (the artifact's triton_files).
  std::map<std::string, std::string>* triton_files = nullptr;
};

struct PassOutput {
  std::string ir;
  std::string log;
};

// What a pass's output depends on besides its input, its arguments and its
// own name and version (the key has those from the pipeline): the
// toolchain it runs ("toolchain.nvrtc" = its version) and the request's
// facts it writes into its output ("input.name", which NVRTC and HIPRTC put
// into __FILE__). The cache key takes the union over the pipeline's passes.
using KeyDeclaration = std::function<std::vector<KeyComponent>(const CompileJob& job, const CudaToolkit& toolkit)>;

// For a pass whose output depends on nothing else: kjit's own rewriting
// passes, and plugin passes (their plugin's name, version and key hook are in
// the key already).
inline std::vector<KeyComponent> declares_nothing(const CompileJob&, const CudaToolkit&) { return {}; }

struct PassImpl {
  std::string name;
  std::string version;   // enters the cache key
  IrKind takes = IrKind::ptx;
  IrKind gives = IrKind::ptx;
  std::vector<std::string> arg_keys;  // the arguments it accepts
  std::string origin = "builtin";     // or the plugin's name
  std::function<Result<PassOutput>(PassContext&, std::string_view ir)> run;
  // Required: the registry refuses a pass that declares nothing, so no
  // toolchain is left out of the key by a pass that forgot to say.
  KeyDeclaration declares_key;
  // What the artifact says built it (Artifact::toolkit), for a pass that
  // runs a toolchain of its own; null for one that does not. It is given the
  // routed CUDA toolkit's description ("13.0 (system: /usr/local/cuda)").
  std::function<std::string(const std::string& cuda_toolkit)> names_toolchain = {};
};

class PassRegistry {
 public:
  // A second pass with the same name is failed_precondition naming both origins.
  Status add(PassImpl pass);
  const PassImpl* find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, PassImpl, std::less<>> passes_;
};

// The artifact's "what built it": the distinct toolchains the pipeline's
// passes name (PassImpl::names_toolchain), in pipeline order, joined by " + ".
std::string toolchains_of(const PipelineSpec& pipeline, const PassRegistry& registry, const std::string& cuda_toolkit);

}  // namespace kjit
