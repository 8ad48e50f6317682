#include "pipeline/tileir_passes.h"

#include <cstdlib>

#include "backends/tileiras/tileiras.h"
#include "pipeline/compile_options.h"

namespace kjit {
namespace {

Result<PassOutput> run_tileiras(PassContext& ctx, std::string_view bytecode) {
  const Result<TileirasToolchain>& tileiras = tileiras_toolchain();
  if (!tileiras) return tileiras.error();
  Result<CheckedOptions> options = check_options(ctx.job.input_kind, ctx.job.options);
  if (!options) return options.error();
  TileirasRequest request;
  request.bytecode = bytecode;
  request.sm = ctx.job.target.sm;
  request.options = std::move(options->tileiras);
  request.input_name = ctx.job.input_name;
  // The worker's TMPDIR is its private work directory, emptied after each job.
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) request.temp_parent = tmpdir;
  Result<TileirasOutput> out = assemble_tile_ir(*tileiras, request);
  if (!out) return out.error();
  return PassOutput{std::move(out->cubin), std::move(out->log)};
}

std::string tileiras_name(const std::string&) {
  const Result<TileirasToolchain>& tileiras = tileiras_toolchain();
  return tileiras ? tileiras->describe() : "tileiras (not installed)";
}

}  // namespace

std::vector<KeyComponent> tileiras_key(const CompileJob& job, const CudaToolkit&) {
  const Result<TileirasToolchain>& tileiras = tileiras_toolchain();
  // Without tileiras the compile fails and nothing is stored under the key.
  return {{"toolchain.tileiras", tileiras ? tileiras->version + "+" + tileiras->build_digest : "none"},
          {"tileiras.gpu_name", job.target.sm_name()}};
}

void register_tileir_passes(PassRegistry& registry) {
  registry.add({"tileiras-assemble", "1", IrKind::tileir, IrKind::cubin, {}, "builtin", run_tileiras, tileiras_key,
                tileiras_name});
}

}  // namespace kjit
