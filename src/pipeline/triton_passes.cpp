#include "pipeline/triton_passes.h"

#include <nlohmann/json.hpp>

#include "backends/triton/triton_build.h"
#include "backends/triton/triton_compile.h"
#include "pipeline/triton_pipeline.h"

namespace kjit {
namespace {

const TritonBuild* build_of(const CompileJob& job) {
  return job.triton_build.empty() ? default_triton_build() : find_triton_build(job.triton_build);
}

Result<PassOutput> run_triton(PassContext& ctx, std::string_view module_text) {
  const TritonBuild* build = build_of(ctx.job);
  if (!build)
    return make_error(ErrorCode::failed_precondition,
                      "Triton build '" + ctx.job.triton_build + "' is not one this process knows");
  TritonCompileRequest request;
  request.module_text = module_text;
  request.input_name = ctx.job.input_name;
  request.target = ctx.job.target;
  request.options = ctx.job.options;
  // Set by the plan from the daemon's configuration, never by a request.
  if (auto edits = ctx.args.find(std::string(k_triton_edits_arg)); edits != ctx.args.end())
    request.edits_json = edits->second;
  if (auto plugins = ctx.args.find(std::string(k_triton_plugins_arg)); plugins != ctx.args.end()) {
    const nlohmann::json list = nlohmann::json::parse(plugins->second, nullptr, false);
    if (list.is_array())
      for (const nlohmann::json& plugin : list)
        if (plugin.is_object()) request.plugins.push_back(plugin.value("path", std::string()));
  }
  request.plugins_off = ctx.job.triton_plugins_off;
  Result<TritonCompileOutput> out = compile_triton(*build, request);
  if (!out) return out.error();
  if (ctx.triton_metadata) *ctx.triton_metadata = std::move(out->metadata);
  if (ctx.triton_files) *ctx.triton_files = std::move(out->files);
  std::string log = out->log;
  if (!log.empty() && log.back() != '\n') log += '\n';
  if (!out->stages.empty()) {
    log += build->name + " stages:";
    for (const StageTiming& stage : out->stages) log += " " + stage.stage + " " + std::to_string(stage.ms) + " ms";
    log += '\n';
  }
  // Which MLIR passes ran, edits applied: what `kjit pipeline show` promised.
  for (const TritonStage& stage : out->passes) {
    if (stage.passes.empty()) continue;  // ptx, cubin: LLVM and ptxas, no MLIR pass
    log += stage.name + " passes:";
    for (const std::string& pass : stage.passes) log += " " + pass;
    log += '\n';
  }
  return PassOutput{std::move(out->binary), std::move(log)};
}

// The build by what it is, not only its name: a reinstalled build of the same
// version with other binaries makes other keys.
// Each plugin is a component of its own, so that `kjit cache explain` names
// the plugin when it is what differs (the plugins a request switched off are
// the job's own component, triton.plugins_off).
std::vector<KeyComponent> triton_key(const CompileJob& job, const CudaToolkit&) {
  const TritonBuild* build = build_of(job);
  if (!build) return {{"toolchain.triton", "none"}};
  std::vector<KeyComponent> out{{"toolchain.triton", build->core_identity()}};
  for (const auto& [name, text] : build->plugin_identities()) out.push_back({"toolchain.triton.plugin " + name, text});
  // Another build's newer ptxas, for an arch the build's own does not know.
  if (const TritonPtxas* lent = build->borrowed_ptxas_for(job.target))
    out.push_back({"toolchain.triton.ptxas", "ptxas-blackwell " + lent->version + " sha256:" + lent->sha256 +
                                                 " (" + build->borrowed_from + "'s)"});
  return out;
}

std::string triton_name(const std::string&) {
  const TritonBuild* build = default_triton_build();
  return build ? "Triton (" + build->name + " by default)" : "Triton (no build)";
}

}  // namespace

void register_triton_passes(PassRegistry& registry) {
  // Version 2: the entry carries Triton's intermediate files too.
  registry.add({"triton-compile", "2", IrKind::triton, IrKind::cubin, {}, "builtin", run_triton, triton_key, triton_name});
  registry.add(
      {"triton-compile-amd", "2", IrKind::triton, IrKind::hsaco, {}, "builtin", run_triton, triton_key, triton_name});
}

}  // namespace kjit
