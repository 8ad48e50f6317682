#include "pipeline/compile_pipeline.h"

#include <algorithm>
#include <chrono>

#include "backends/llvm/llvm_optimizer.h"
#include "core/input_kinds.h"
#include "metadata/cubin_reader.h"
#include "metadata/hsaco_reader.h"
#include "pipeline/amd_passes.h"
#include "pipeline/cache_key.h"
#include "pipeline/triton_pipeline.h"
#include "pipeline/triton_request_edit.h"
#include "pipeline/builtin_passes.h"
#include "pipeline/compile_key.h"
#include "pipeline/default_pipelines.h"
#include "pipeline/pipeline_runner.h"

namespace kjit {
namespace {

bool serves(const PipelineSpec& pipeline, InputKind input) {
  return pipeline.inputs.empty() || std::find(pipeline.inputs.begin(), pipeline.inputs.end(), input) != pipeline.inputs.end();
}

bool edit_applies(const PipelineEdit& edit, const PipelineSpec& pipeline) {
  if (!edit.scope.empty()) return edit.scope == pipeline.name;
  if (edit.op == EditOp::override_stage) {
    return std::any_of(pipeline.stages.begin(), pipeline.stages.end(),
                       [&](const StageSpec& s) { return s.name == edit.stage.name; });
  }
  return has_pass(pipeline, edit.anchor);
}

// A kernel a name expression asked for ("scale<float>") takes that name
// rather than its symbol's.
void name_kernels_by_expression(Artifact& artifact) {
  for (KernelInfo& kernel : artifact.kernels)
    for (const auto& [expression, symbol] : artifact.lowered_names)
      if (kernel.lowered_name == symbol) kernel.name = expression;
}

}  // namespace

CompilePipeline::CompilePipeline(std::shared_ptr<const CudaToolkit> toolkit)
    : toolkit_(toolkit), routing_(std::move(toolkit), {}, {}, ToolkitPolicy::system_first) {
  register_builtin_passes(registry_);
}

Result<std::shared_ptr<const CompilePipeline>> CompilePipeline::create(std::shared_ptr<const CudaToolkit> toolkit,
                                                                       PipelineSetup setup) {
  auto pipeline = std::make_shared<CompilePipeline>(std::move(toolkit));
  pipeline->named_ = std::move(setup.config.pipelines);
  for (PipelineEdit& edit : setup.config.edits) {
    if (!is_triton_edit(edit)) {
      pipeline->edits_.push_back(std::move(edit));
    } else if (edit.op == EditOp::override_pipeline) {
      return make_error(ErrorCode::failed_precondition, "edit from " + edit.origin + ": " + edit.scope +
                                                            " is Triton's pipeline, which cannot be overridden whole");
    } else {
      pipeline->triton_edits_[edit.scope].push_back(std::move(edit));
    }
  }
  if (!setup.triton_plugins.empty()) {
    Result<std::string> plugins = kjit::triton_plugins_json(setup.triton_plugins);
    if (!plugins) return plugins.error();
    pipeline->triton_plugins_json_ = std::move(*plugins);
    pipeline->triton_plugin_paths_ = std::move(setup.triton_plugins);
  }
  for (const std::string& path : setup.plugin_paths) {
    Result<LoadedPlugin> plugin = load_plugin(path);
    if (!plugin) return plugin.error();
    for (const LoadedPlugin& other : pipeline->plugins_)
      if (other.name == plugin->name)
        return make_error(ErrorCode::failed_precondition, "plugin " + path + ": name '" + plugin->name +
                                                              "' is already taken by " + other.path);
    for (PassImpl& pass : plugin->passes)
      if (Status s = pipeline->registry_.add(pass); !s) return s.error();
    for (PipelineEdit& edit : plugin->edits) {
      if (edit.op == EditOp::override_pipeline) pipeline->named_.push_back(edit.pipeline);
      else pipeline->edits_.push_back(edit);
    }
    pipeline->plugins_.push_back(std::move(plugin.value()));
  }
  for (const std::string& path : setup.llvm_pass_plugins)
    if (Status s = load_llvm_pass_plugin(path); !s) return s.error();
  pipeline->llvm_pass_plugins_ = std::move(setup.llvm_pass_plugins);
  pipeline->routing_ = ToolkitRouting(pipeline->toolkit_, std::move(setup.discovered_toolkits),
                                      std::move(setup.pinned_toolkits), setup.toolkit_policy);
  if (Status s = pipeline->validate(); !s) return s.error();
  pipeline->resolve_all();
  return std::shared_ptr<const CompilePipeline>(std::move(pipeline));
}

Status CompilePipeline::validate() const {
  std::vector<const PipelineSpec*> all;
  for (const PipelineSpec& p : default_pipelines()) all.push_back(&p);
  for (const PipelineSpec& p : named_) {
    for (const PipelineSpec* other : all)
      if (other->name == p.name)
        return make_error(ErrorCode::failed_precondition, "pipeline '" + p.name + "' is defined twice");
    all.push_back(&p);
  }
  for (const PipelineSpec* p : all)
    for (const StageSpec& stage : p->stages)
      for (const std::string& pass : stage.passes)
        if (!registry_.find(pass))
          return make_error(ErrorCode::failed_precondition, "pipeline '" + p->name + "' stage '" + stage.name +
                                                                "' names pass '" + pass + "', which no one registers");
  for (const PipelineEdit& edit : edits_) {
    if ((edit.op == EditOp::insert_before || edit.op == EditOp::insert_after || edit.op == EditOp::replace) &&
        !registry_.find(edit.pass))
      return make_error(ErrorCode::failed_precondition, "edit from " + edit.origin + " names pass '" + edit.pass +
                                                            "', which no one registers");
    if (edit.op == EditOp::override_stage)
      for (const std::string& pass : edit.stage.passes)
        if (!registry_.find(pass))
          return make_error(ErrorCode::failed_precondition, "override-stage from " + edit.origin + " names pass '" +
                                                                pass + "', which no one registers");
    bool anchored = false;
    for (const PipelineSpec* p : all) {
      if (!edit.scope.empty() && p->name != edit.scope) continue;
      PipelineEdit probe = edit;
      probe.scope.clear();
      anchored |= edit_applies(probe, *p);
    }
    if (!anchored) {
      std::string what = edit.op == EditOp::override_stage ? "stage '" + edit.stage.name + "'" : "pass '" + edit.anchor + "'";
      return make_error(ErrorCode::failed_precondition,
                        "edit '" + std::string(to_string(edit.op)) + "' from " + edit.origin + " names " + what +
                            ", which " + (edit.scope.empty() ? "no pipeline has" : "pipeline '" + edit.scope + "' does not have"));
    }
  }
  return Ok{};
}

const std::vector<PipelineEdit>& CompilePipeline::triton_edits(const std::string& pipeline) const {
  static const std::vector<PipelineEdit> none;
  auto it = triton_edits_.find(pipeline);
  return it == triton_edits_.end() ? none : it->second;
}

std::string CompilePipeline::triton_stages_digest(const std::string& backend) const {
  const std::vector<PipelineEdit>& edits = triton_edits(backend == "hip" ? "triton-amd" : "triton-nvidia");
  if (edits.empty() && triton_plugins_json_.empty()) return {};
  return sha256_hex((edits.empty() ? std::string() : triton_edits_json(edits)) + "\n" + triton_plugins_json_);
}

const CudaToolkit& CompilePipeline::toolkit_for(const Target& target) const {
  return *routing_.for_target(target).toolkit;
}

std::vector<std::string> CompilePipeline::pipeline_names() const {
  std::vector<std::string> names;
  for (const PipelineSpec& p : default_pipelines()) names.push_back(p.name);
  for (const PipelineSpec& p : named_) names.push_back(p.name);
  return names;
}

Result<std::string> CompilePipeline::pipeline_name_for(InputKind input, const std::string& name, Vendor vendor) const {
  if (!name.empty()) return name;
  if (const PipelineSpec* p = default_pipeline_for(input, vendor)) return p->name;
  Vendor other = vendor == Vendor::amd ? Vendor::nvidia : Vendor::amd;
  if (default_pipeline_for(input, other))
    return make_error(ErrorCode::invalid_argument, std::string(to_string(input)) + " input builds only for " +
                                                       std::string(to_string(other)) + " targets (" +
                                                       (other == Vendor::amd ? "hip:gfx90a, ..." : "cuda:90, ...") +
                                                       "), not for " + std::string(to_string(vendor)) + "'s");
  return make_error(ErrorCode::unimplemented, "no pipeline takes " + std::string(to_string(input)) + " input yet");
}

Result<PipelineSpec> CompilePipeline::base_pipeline(InputKind input, const std::string& name) const {
  const PipelineSpec* found = nullptr;
  for (const PipelineSpec& p : named_)
    if (p.name == name) found = &p;
  for (const PipelineSpec& p : default_pipelines())
    if (p.name == name) found = &p;
  if (!found) {
    std::string known;
    for (const std::string& n : pipeline_names()) known += (known.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::invalid_argument, "no pipeline named '" + name + "'; known: " + known);
  }
  if (!serves(*found, input))
    return make_error(ErrorCode::invalid_argument,
                      "pipeline '" + name + "' does not take " + std::string(to_string(input)) + " input");
  return *found;
}

void CompilePipeline::resolve_all() {
  std::vector<std::string> names = pipeline_names();
  for (const InputKindInfo& input : input_kinds())
    for (const std::string& name : names)
      if (Result<PipelineSpec> pipeline = apply_edits(input.kind, name))
        resolved_[{input.kind, name}] = Resolved{*pipeline, describe_for_key(*pipeline, registry_)};
}

Result<PipelineSpec> CompilePipeline::effective_pipeline(InputKind input, const std::string& name,
                                                          Vendor vendor) const {
  Result<std::string> resolved_name = pipeline_name_for(input, name, vendor);
  if (!resolved_name) return resolved_name.error();
  if (auto it = resolved_.find({input, *resolved_name}); it != resolved_.end()) return it->second.pipeline;
  // Not resolvable (an unknown name, an input no pipeline takes): the error.
  return apply_edits(input, *resolved_name);
}

Result<PipelineSpec> CompilePipeline::apply_edits(InputKind input, const std::string& name) const {
  auto pipeline = base_pipeline(input, name);
  if (!pipeline) return pipeline;
  PipelineSpec effective = *pipeline;
  // Global edits apply where their anchor is; an edit scoped to this
  // pipeline must find its anchor, or the request fails naming it.
  for (const PipelineEdit& edit : edits_) {
    if (!edit_applies(edit, effective)) continue;
    if (Status s = apply_edit(effective, edit); !s) return s.error();
  }
  return effective;
}

Result<CompilePlan> CompilePipeline::plan(const CompileJob& job) const {
  Result<std::string> name = pipeline_name_for(job.input_kind, job.pipeline, job.target.vendor);
  if (!name) return name.error();
  auto resolved = resolved_.find({job.input_kind, *name});
  if (resolved == resolved_.end()) {
    // resolve_all() kept every pipeline that resolves: this one fails.
    Result<PipelineSpec> failing = apply_edits(job.input_kind, *name);
    if (!failing) return failing.error();
    return make_error(ErrorCode::internal, "pipeline '" + *name + "' was not resolved at start-up");
  }
  std::optional<Vendor> builds_for = vendor_of(resolved->second.pipeline);
  if (builds_for && *builds_for != job.target.vendor)
    return make_error(ErrorCode::invalid_argument, "pipeline '" + *name + "' builds for " +
                                                       std::string(to_string(*builds_for)) + " targets; " +
                                                       job.target.canonical() + " is " +
                                                       std::string(to_string(job.target.vendor)) + "'s");
  if (job.target.is_amd() && !job.target.amd_arch().llvm19_builds && triton_pass_of(resolved->second.pipeline).empty())
    return make_error(ErrorCode::failed_precondition,
                      job.target.canonical() + " is built from Triton IR only (by a Triton build's own LLVM): LLVM 19, "
                      "which pipeline '" + *name + "' runs, does not know it");
  CompilePlan plan;
  plan.pipeline = resolved->second.pipeline;
  plan.args = plan.pipeline.args;
  for (const auto& [key, value] : job.pass_args) {
    size_t dot = key.find('.');
    std::string pass_name = key.substr(0, dot);
    if (dot == std::string::npos || dot + 1 == key.size())
      return make_error(ErrorCode::invalid_argument, "pass argument '" + key + "' is not of the form PASS.KEY");
    if (!has_pass(plan.pipeline, pass_name))
      return make_error(ErrorCode::invalid_argument, "pass argument '" + key + "' names pass '" + pass_name +
                                                         "', which pipeline '" + plan.pipeline.name + "' does not run");
    const PassImpl* pass = registry_.find(pass_name);
    std::string arg = key.substr(dot + 1);
    if (std::find(pass->arg_keys.begin(), pass->arg_keys.end(), arg) == pass->arg_keys.end())
      return make_error(ErrorCode::invalid_argument, "pass '" + pass_name + "' takes no argument '" + arg + "'");
    plan.args[key] = value;
  }
  // Triton's edits and plugins reach the build's worker as the pass's
  // arguments, so the key has them.
  // A request's own edits come after the daemon's, as a plugin's come after
  // the configuration's.
  if (const std::string pass = triton_pass_of(plan.pipeline); !pass.empty()) {
    std::vector<PipelineEdit> edits = triton_edits(plan.pipeline.name);
    for (size_t i = 0; i < job.triton_edits.size(); ++i) {
      Result<PipelineEdit> edit = requested_triton_edit(job.triton_edits[i], i);
      if (!edit) return edit.error();
      edit->scope = plan.pipeline.name;
      edits.push_back(std::move(*edit));
    }
    if (!edits.empty()) plan.args[pass + "." + std::string(k_triton_edits_arg)] = triton_edits_json(edits);
    if (!triton_plugins_json_.empty()) plan.args[pass + "." + std::string(k_triton_plugins_arg)] = triton_plugins_json_;
  } else if (!job.triton_edits.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "triton_edits change a Triton build's stages; pipeline '" + plan.pipeline.name + "' runs none");
  }

  KeyInputs inputs{job, plan.pipeline, registry_, toolkit_for(job.target), plan.args, std::nullopt, {},
                   &resolved->second.key_description};
  for (const LoadedPlugin& plugin : plugins_) {
    bool active = std::any_of(plugin.passes.begin(), plugin.passes.end(),
                              [&](const PassImpl& p) { return has_pass(plan.pipeline, p.name); });
    bool hook = plugin.key_hook && (plugin.key_hook_scope.empty() || plugin.key_hook_scope == plan.pipeline.name);
    for (const PipelineEdit& edit : plugin.edits)
      active |= edit.scope == plan.pipeline.name;
    if (!active && !hook) continue;
    inputs.plugin_components.push_back({"plugin." + plugin.name, plugin.version});
    if (hook) {
      Result<KeyHookResult> contribution = plugin.key_hook(job);
      if (!contribution) return contribution.error();
      for (const KeyComponent& c : contribution->components)
        inputs.plugin_components.push_back({"plugin." + plugin.name + "." + c.name, c.value});
      if (contribution->input_digest) inputs.input_digest = "plugin." + plugin.name + ":" + *contribution->input_digest;
    }
  }
  plan.key = compile_key(inputs);
  return plan;
}

Result<CacheKey> CompilePipeline::key(const CompileJob& job) const {
  auto p = plan(job);
  if (!p) return p.error();
  return std::move(p->key);
}

Result<Artifact> CompilePipeline::run(const CompileJob& job) const {
  Result<CompilePlan> p = plan(job);
  if (!p) return p.error();
  return run(job, *p);
}

Result<Artifact> CompilePipeline::run(const CompileJob& job, const CompilePlan& plan,
                                      std::string_view caller_namespace) const {
  Artifact artifact;
  artifact.target = job.target.canonical();
  artifact.pipeline = plan.pipeline.name;
  artifact.key = plan.key.hex;
  artifact.key_components = plan.key.components;

  if (job.target.is_amd()) return run_amd(job, plan, std::move(artifact), caller_namespace);

  const RoutedToolkit& routed = routing_.for_target(job.target);
  const CudaToolkit& toolkit = *routed.toolkit;
  artifact.toolkit = toolchains_of(plan.pipeline, registry_, routed.describe());
  bool cubin_possible = static_cast<bool>(check_toolkit_supports(toolkit, job.target));
  bool stop_at_ptx = job.wanted == ArtifactKind::ptx || (job.allow_ptx_fallback && !cubin_possible);
  std::map<std::string, std::string> lowered;
  PassContext context{job, toolkit, {}, lowered, llvm_pass_plugins_, caller_namespace, &artifact.triton_metadata,
                      &artifact.triton_files};
  Result<PipelineRun> run = run_pipeline(plan.pipeline, registry_, context, plan.args, job.input,
                                         ir_kind_of(job.input_kind), stop_at_ptx);
  artifact.triton_build = job.triton_build;
  if (!run) return run.error();
  artifact.timings = std::move(run->stages);
  artifact.log = std::move(run->log);
  if (has_pass(plan.pipeline, "nvptx-codegen")) {
    // LLVM 19 writes PTX up to sm_90; newer targets get that PTX retargeted
    // (ptx-retarget), which a reader of the artifact should know.
    LlvmCodegenPlan codegen = llvm_codegen_plan(job.target);
    std::string note = "PTX written by LLVM's NVPTX back end for CPU " + codegen.cpu + " (" + codegen.features + ")";
    if (codegen.retargeted && has_pass(plan.pipeline, "ptx-retarget")) note += ", retargeted to " + codegen.ptx_target;
    artifact.notes.push_back(std::move(note));
  }
  artifact.lowered_names = std::move(lowered);

  if (run->kind == IrKind::ptx) {
    if (job.wanted != ArtifactKind::ptx)
      artifact.notes.push_back("PTX returned for the driver to JIT: the CUDA toolkit " + toolkit.version() +
                               " cannot build a cubin for " + job.target.sm_name() + " (needs CUDA " +
                               std::string(job.target.arch().min_cuda) + ")");
    artifact.kind = ArtifactKind::ptx;
    artifact.bytes = std::move(run->ir);
    return artifact;
  }
  if (run->kind != IrKind::cubin) {
    return make_error(ErrorCode::failed_precondition, "pipeline '" + plan.pipeline.name + "' ended with " +
                                                          std::string(to_string(run->kind)) + ", not a cubin or PTX");
  }
  if (job.wanted == ArtifactKind::ptx)
    return make_error(ErrorCode::failed_precondition, "pipeline '" + plan.pipeline.name + "' never produced PTX");

  auto start = std::chrono::steady_clock::now();
  Result<CubinInfo> info = read_cubin(run->ir);
  double metadata_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  artifact.timings.push_back({"metadata", metadata_ms, {{"cubin-reader", metadata_ms}}});
  if (!info) return make_error(ErrorCode::internal, "the cubin produced could not be read: " + info.error().message);
  if (info->sm != job.target.sm)
    return make_error(ErrorCode::internal, "the pipeline produced a cubin for sm_" + std::to_string(info->sm) +
                                               " when " + job.target.sm_name() + " was asked for");
  artifact.kernels = std::move(info->kernels);
  name_kernels_by_expression(artifact);
  artifact.kind = ArtifactKind::cubin;
  artifact.bytes = std::move(run->ir);
  return artifact;
}

Result<Artifact> CompilePipeline::run_amd(const CompileJob& job, const CompilePlan& plan, Artifact artifact,
                                          std::string_view caller_namespace) const {
  artifact.toolkit = toolchains_of(plan.pipeline, registry_, {});
  std::map<std::string, std::string> lowered;
  PassContext context{job, *toolkit_, {}, lowered, llvm_pass_plugins_, caller_namespace, &artifact.triton_metadata,
                      &artifact.triton_files};
  Result<PipelineRun> run = run_pipeline(plan.pipeline, registry_, context, plan.args, job.input,
                                         ir_kind_of(job.input_kind), false);
  artifact.triton_build = job.triton_build;
  if (!run) return run.error();
  artifact.timings = std::move(run->stages);
  artifact.log = std::move(run->log);
  artifact.lowered_names = std::move(lowered);
  if (run->kind != IrKind::hsaco)
    return make_error(ErrorCode::failed_precondition, "pipeline '" + plan.pipeline.name + "' ended with " +
                                                          std::string(to_string(run->kind)) + ", not a code object");
  auto start = std::chrono::steady_clock::now();
  Result<HsacoInfo> info = read_hsaco(run->ir);
  double metadata_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  artifact.timings.push_back({"metadata", metadata_ms, {{"hsaco-reader", metadata_ms}}});
  if (!info) return make_error(ErrorCode::internal, "the code object produced could not be read: " + info.error().message);
  if (info->processor != job.target.processor)
    return make_error(ErrorCode::internal, "the pipeline produced a code object for " + info->processor + " when " +
                                               job.target.processor + " was asked for");
  artifact.notes.push_back("code object v" + std::to_string(info->code_object_version) + " for " + info->target_id);
  artifact.kernels = std::move(info->kernels);
  name_kernels_by_expression(artifact);
  artifact.kind = ArtifactKind::hsaco;
  artifact.bytes = std::move(run->ir);
  return artifact;
}

}  // namespace kjit
