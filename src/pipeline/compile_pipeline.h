// The compiler as one pure function, CompileJob -> Artifact | Error: picks
// the pipeline (default, named, or a plugin's), applies the edits of the
// configuration and of plugins, derives the cache key, runs the passes, and
// reads the kernels back from the binary.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "pipeline/cache_key.h"
#include "pipeline/compile_plan.h"
#include "core/artifact.h"
#include "core/compile_job.h"
#include "pipeline/pass.h"
#include "pipeline/pipeline_spec.h"
#include "pipeline/toolkit_routing.h"
#include "plugin/plugin_loader.h"

namespace kjit {

struct PipelineSetup {
  PipelineConfig config;                       // named pipelines and edits from the daemon's TOML
  std::vector<std::string> plugin_paths;       // kjit plugins (include/kjit/plugin.h)
  std::vector<std::string> llvm_pass_plugins;  // LLVM pass plugins, for llvm-passes
  // Toolkits found on the host besides the default one (wheels, the local
  // prefix), and those pinned to target ranges ([[toolkits]]; first match
  // wins). The policy picks among the first and the default for the rest.
  std::vector<RoutedToolkit> discovered_toolkits;
  std::vector<RoutedToolkit> pinned_toolkits;
  ToolkitPolicy toolkit_policy = ToolkitPolicy::system_first;
  // Pass plugin libraries every Triton build loads ([triton] plugins).
  std::vector<std::string> triton_plugins;
};

class CompilePipeline {
 public:
  // The built-in pipelines, no plugins.
  explicit CompilePipeline(std::shared_ptr<const CudaToolkit> toolkit);

  // Loads plugins and checks every pipeline and edit: a bad plugin, a pass
  // no one registers or an edit whose anchor exists nowhere is an error here,
  // at start-up, not at the first request.
  static Result<std::shared_ptr<const CompilePipeline>> create(std::shared_ptr<const CudaToolkit> toolkit,
                                                               PipelineSetup setup);

  // The pipeline a request would run, after all edits. An empty name is the
  // default for the input and the vendor of the request's target.
  Result<PipelineSpec> effective_pipeline(InputKind input, const std::string& name,
                                          Vendor vendor = Vendor::nvidia) const;
  // What a job will run and the key it caches under.
  Result<CompilePlan> plan(const CompileJob& job) const;
  Result<CacheKey> key(const CompileJob& job) const;
  Result<Artifact> run(const CompileJob& job) const;
  // `plan` must be plan(job)'s (here, or in the daemon that sent it).
  // `caller_namespace` (PassContext) keeps one caller's automatic PCHs from
  // another's; the artifact does not depend on it.
  Result<Artifact> run(const CompileJob& job, const CompilePlan& plan, std::string_view caller_namespace = {}) const;

  std::vector<std::string> pipeline_names() const;
  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  // The default (system) toolkit.
  const CudaToolkit& toolkit() const { return *toolkit_; }
  // The toolkit that builds for `target` (toolkit_routing.h).
  const CudaToolkit& toolkit_for(const Target& target) const;
  const ToolkitRouting& toolkits() const { return routing_; }
  // The configuration's edits of Triton's stages for a Triton pipeline
  // (triton-nvidia, triton-amd), and the Triton pass plugins as the plan
  // passes them on (JSON; "" for none).
  const std::vector<PipelineEdit>& triton_edits(const std::string& pipeline) const;
  const std::string& triton_plugins_json() const { return triton_plugins_json_; }
  const std::vector<std::string>& triton_plugin_paths() const { return triton_plugin_paths_; }
  // What the daemon changes in Triton's stages for a backend's pipeline
  // (triton-nvidia for "cuda", triton-amd for "hip"): the SHA-256 of its
  // edits and its plugins' digests, "" when it changes nothing. A Triton
  // process compiling through kjitd adds it to Triton's key, as Triton adds
  // a stages hook's key, so the kernels a plugin changed never meet the others.
  std::string triton_stages_digest(const std::string& backend) const;

 private:
  // The name a request's pipeline resolves to: its own, or the default.
  Result<std::string> pipeline_name_for(InputKind input, const std::string& name, Vendor vendor) const;
  Result<PipelineSpec> base_pipeline(InputKind input, const std::string& name) const;
  Result<PipelineSpec> apply_edits(InputKind input, const std::string& name) const;
  // The rest of run() for hip: targets: a code object, read back.
  Result<Artifact> run_amd(const CompileJob& job, const CompilePlan& plan, Artifact artifact,
                           std::string_view caller_namespace) const;
  void resolve_all();
  Status validate() const;

  std::shared_ptr<const CudaToolkit> toolkit_;
  PassRegistry registry_;
  std::vector<PipelineSpec> named_;   // configuration and plugin pipelines
  std::vector<PipelineEdit> edits_;   // configuration first, then plugins in load order
  std::vector<LoadedPlugin> plugins_;
  std::vector<std::string> llvm_pass_plugins_;
  // Edits of Triton's own stages, by pipeline: their anchors are MLIR pass
  // names a Triton build resolves per target, not kjit passes.
  std::map<std::string, std::vector<PipelineEdit>> triton_edits_;
  std::vector<std::string> triton_plugin_paths_;
  std::string triton_plugins_json_;
  ToolkitRouting routing_;
  // Every (input, pipeline name) a request can ask for (an empty name first
  // becomes the default's, by vendor), with its edits
  // applied and its description for the key, resolved once by create():
  // pipelines and edits never change after it, and the hit path plans every
  // request.
  struct Resolved {
    PipelineSpec pipeline;
    std::string key_description;
  };
  std::map<std::pair<InputKind, std::string>, Resolved> resolved_;
};

}  // namespace kjit
