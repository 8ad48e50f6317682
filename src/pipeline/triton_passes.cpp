#include "pipeline/triton_passes.h"

#include "backends/triton/triton_build.h"
#include "backends/triton/triton_compile.h"

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
  TritonCompileRequest request{module_text, ctx.job.input_name, ctx.job.target, ctx.job.options};
  Result<TritonCompileOutput> out = compile_triton(*build, request);
  if (!out) return out.error();
  if (ctx.triton_metadata) *ctx.triton_metadata = std::move(out->metadata);
  std::string log = out->log;
  if (!out->stages.empty()) {
    if (!log.empty() && log.back() != '\n') log += '\n';
    log += build->name + " stages:";
    for (const StageTiming& stage : out->stages) log += " " + stage.stage + " " + std::to_string(stage.ms) + " ms";
    log += '\n';
  }
  return PassOutput{std::move(out->binary), std::move(log)};
}

// The build by what it is, not only its name: a reinstalled build of the same
// version with other binaries makes other keys.
std::vector<KeyComponent> triton_key(const CompileJob& job, const CudaToolkit&) {
  const TritonBuild* build = build_of(job);
  return {{"toolchain.triton", build ? build->identity() : "none"}};
}

std::string triton_name(const std::string&) {
  const TritonBuild* build = default_triton_build();
  return build ? "Triton (" + build->name + " by default)" : "Triton (no build)";
}

}  // namespace

void register_triton_passes(PassRegistry& registry) {
  registry.add({"triton-compile", "1", IrKind::triton, IrKind::cubin, {}, "builtin", run_triton, triton_key, triton_name});
  registry.add(
      {"triton-compile-amd", "1", IrKind::triton, IrKind::hsaco, {}, "builtin", run_triton, triton_key, triton_name});
}

}  // namespace kjit
