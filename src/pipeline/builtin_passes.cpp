#include "pipeline/builtin_passes.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "backends/llvm/libdevice.h"
#include "backends/llvm/llvm_module.h"
#include "backends/llvm/llvm_optimizer.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/llvm/nvvm_reflect.h"
#include "backends/nvjitlink/nvjitlink_stage.h"
#include "backends/nvrtc/include_policy.h"
#include "backends/nvrtc/nvrtc_pch.h"
#include "backends/nvrtc/nvrtc_stage.h"
#include "backends/ptx/ptx_retarget.h"
#include "backends/amdgpu/amdgpu_codegen.h"
#include "pipeline/amd_passes.h"
#include "pipeline/cache_key.h"
#include "pipeline/compile_options.h"
#include "pipeline/header_set.h"
#include "pipeline/hip_options.h"
#include "pipeline/tileir_passes.h"
#include "pipeline/triton_passes.h"

namespace kjit {
namespace {

// Where a compile's automatic PCHs live, when the process keeps them and
// the source includes a header before its code (includes_a_header): one
// directory per NVRTC library, option list and set of request headers, and
// with request headers per caller's namespace too (header_set.h).
// NVRTC checks a PCH against the options and the source's directives, but
// not against the contents of the headers given with the program: a PCH of
// another request's "common.h" would compile this one against the wrong
// text. Requests that differ only below their includes share a directory;
// NVRTC keeps one PCH file in it per leading directives.
std::string pch_directory(const CudaToolkit& toolkit, const NvrtcApi& nvrtc, const CompileJob& job,
                          const std::vector<std::string>& options, std::string_view ns) {
  const std::optional<NvrtcPchSettings> pch = nvrtc_auto_pch();
  if (!pch) return {};
  const std::string toolchain = toolkit.home() + "\n" + nvrtc.library_path;
  const std::string directives = leading_directives(job.input);
  if (!includes_a_header(directives)) return {};
  note_header_set(header_set_digest(toolchain, options, job.headers, directives, ns));
  return pch->directory + "/" + header_set_digest(toolchain, options, job.headers, {}, ns).substr(0, 32);
}

Result<PassOutput> run_nvrtc(PassContext& ctx, std::string_view source) {
  auto nvrtc = ctx.toolkit.nvrtc();
  if (!nvrtc) return nvrtc.error();
  if (Status s = check_toolkit_supports(ctx.toolkit, ctx.job.target); !s) return s.error();
  if (Status s = check_include_policy(source, ctx.job.input_name, ctx.job.headers); !s) return s.error();
  auto options = check_options(ctx.job.input_kind, ctx.job.options);
  if (!options) return options.error();

  // Not --no-source-include: the toolkit's own headers include their
  // siblings with quotes. The daemon runs in an empty working directory
  // instead, so a quoted include never finds a file of the daemon's.
  std::vector<std::string> nvrtc_options{"-arch=" + ctx.job.target.compute_name()};
  for (const std::string& dir : ctx.toolkit.include_dirs()) nvrtc_options.push_back("--include-path=" + dir);
  nvrtc_options.insert(nvrtc_options.end(), options->nvrtc.begin(), options->nvrtc.end());

  CompileJob job = ctx.job;  // the pass may run on rewritten source
  job.input = std::string(source);
  Result<PtxOutput> out =
      compile_cuda_to_ptx(**nvrtc, job, nvrtc_options,
                          pch_directory(ctx.toolkit, **nvrtc, job, nvrtc_options, ctx.caller_namespace));
  if (!out) return out.error();
  ctx.lowered_names = std::move(out->lowered_names);
  return PassOutput{std::move(out->ptx), std::move(out->log)};
}

Result<PassOutput> run_nvjitlink(PassContext& ctx, std::string_view ptx) {
  auto nvjitlink = ctx.toolkit.nvjitlink();
  if (!nvjitlink) return nvjitlink.error();
  if (Status s = check_toolkit_supports(ctx.toolkit, ctx.job.target); !s) {
    Error error = s.error();
    error.message += "; allow_ptx_fallback (kjit compile --allow-ptx-fallback) returns the PTX for the driver to JIT";
    return error;
  }
  auto options = check_options(ctx.job.input_kind, ctx.job.options);
  if (!options) return options.error();
  std::vector<std::string> link_options{"-arch=" + ctx.job.target.sm_name()};
  link_options.insert(link_options.end(), options->nvjitlink.begin(), options->nvjitlink.end());
  Result<CubinOutput> cubin = link_ptx_to_cubin(**nvjitlink, ptx, ctx.job.input_name, link_options);
  if (!cubin) return cubin.error();
  return PassOutput{std::move(cubin->cubin), std::move(cubin->log)};
}

LlvmTarget llvm_target_for(const PassContext& ctx) {
  const Target& target = ctx.job.target;
  if (target.is_amd()) {
    // The optimiser sees the wave size the code generator will use.
    Result<HipOptions> options = check_hip_options(ctx.job.input_kind, ctx.job.options, target.amd_arch());
    return LlvmTarget{std::string(k_amdgpu_triple), target.processor, options ? options->llvm_features() : ""};
  }
  LlvmCodegenPlan plan = llvm_codegen_plan(target);
  return LlvmTarget{k_cuda_triple, plan.cpu, plan.features};
}

Result<PassOutput> run_libdevice_link(PassContext& ctx, std::string_view ir) {
  Result<LibdeviceResult> linked =
      link_libdevice({ir, ctx.job.input_name, llvm_target_for(ctx), ctx.toolkit.libdevice_path()});
  if (!linked) return linked.error();
  return PassOutput{std::move(linked->ir), {}};
}

Result<PassOutput> run_nvvm_reflect_pass(PassContext& ctx, std::string_view ir) {
  auto options = check_options(ctx.job.input_kind, ctx.job.options);
  if (!options) return options.error();
  NvvmReflectRequest request{ir, ctx.job.input_name, llvm_target_for(ctx), std::nullopt};
  for (const std::string& option : options->llvm)
    if (option.starts_with("-ftz=")) request.ftz = option == "-ftz=true";
  Result<std::string> bitcode = run_nvvm_reflect(request);
  if (!bitcode) return bitcode.error();
  return PassOutput{std::move(*bitcode), {}};
}

Result<PassOutput> run_llvm_passes_pass(PassContext& ctx, std::string_view ir) {
  LlvmOptimizeRequest request;
  request.ir = ir;
  request.name = ctx.job.input_name;
  if (auto it = ctx.args.find("pipeline"); it != ctx.args.end()) request.pipeline = it->second;
  request.target = llvm_target_for(ctx);
  request.pass_plugin_paths = ctx.llvm_pass_plugins;
  Result<std::string> bitcode = run_llvm_passes(request);
  if (!bitcode) return bitcode.error();
  return PassOutput{std::move(*bitcode), {}};
}

Result<PassOutput> run_nvptx_codegen(PassContext& ctx, std::string_view ir) {
  Result<std::string> ptx = nvptx_codegen(ir, ctx.job.input_name, llvm_target_for(ctx));
  if (!ptx) return ptx.error();
  return PassOutput{std::move(*ptx), {}};
}

Result<PassOutput> run_ptx_retarget(PassContext& ctx, std::string_view ptx) {
  LlvmCodegenPlan plan = llvm_codegen_plan(ctx.job.target);
  Result<std::string> out = retarget_ptx(ptx, plan.ptx_target, plan.ptx_min_version);
  if (!out) return out.error();
  return PassOutput{std::move(*out), {}};
}


}  // namespace

Status check_toolkit_supports(const CudaToolkit& toolkit, const Target& target) {
  std::vector<uint32_t> archs = toolkit.supported_archs();
  if (archs.empty() || std::find(archs.begin(), archs.end(), target.sm) != archs.end()) return Ok{};
  const ArchInfo& arch = target.arch();
  return make_error(ErrorCode::invalid_argument,
                    "target " + target.canonical() + " (" + target.sm_name() +
                        ") is not supported by the installed CUDA toolkit " + toolkit.version() + " at " +
                        toolkit.home() + "; " + target.sm_name() + " needs CUDA " + std::string(arch.min_cuda) +
                        " or newer (PTX ISA " + std::string(arch.min_ptx_isa) +
                        "); targets this toolkit supports: " + describe_targets(archs));
}

namespace {

// The digest of a toolkit's libdevice, read once per path: the key is derived
// for every request, hits included.
std::string libdevice_digest(const CudaToolkit& toolkit) {
  const std::string& path = toolkit.libdevice_path();
  if (path.empty()) return "none";
  static std::mutex mutex;
  static std::map<std::string, std::string> digests;
  std::lock_guard lock(mutex);
  if (auto it = digests.find(path); it != digests.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  // Unreadable now is not cached: the compile will say why.
  if (!in) return "unreadable";
  return digests[path] = sha256_hex(bytes.str());
}

// NVRTC writes the source's name into the binary (__FILE__ in assert
// messages, -lineinfo): two names, two artifacts.
std::vector<KeyComponent> nvrtc_key(const CompileJob& job, const CudaToolkit& toolkit) {
  return {{"input.name", job.input_name}, {"toolchain.nvrtc", toolkit.version()}};
}

std::vector<KeyComponent> nvjitlink_key(const CompileJob&, const CudaToolkit& toolkit) {
  return {{"toolchain.nvjitlink", toolkit.version()}};
}

// For every job of a pipeline that links libdevice, not only those whose
// module calls it: which do is known only once the module is parsed, and the
// hit path parses nothing.
std::vector<KeyComponent> libdevice_key(const CompileJob& job, const CudaToolkit& toolkit) {
  std::vector<KeyComponent> components = llvm_toolchain_key(job, toolkit);
  components.push_back({"toolchain.libdevice", libdevice_digest(toolkit)});
  return components;
}

}  // namespace

std::vector<KeyComponent> llvm_toolchain_key(const CompileJob& job, const CudaToolkit&) {
  return {{"toolchain.llvm", llvm_version()},
          {"llvm.triple", job.target.is_amd() ? std::string(k_amdgpu_triple) : std::string(k_cuda_triple)}};
}

void register_builtin_passes(PassRegistry& registry) {
  // Versions change when a pass's output for the same input can change.
  // NVRTC and nvJitLink are the routed CUDA toolkit's: the artifact names it.
  auto the_cuda_toolkit = [](const std::string& cuda_toolkit) { return cuda_toolkit; };
  registry.add({"nvrtc-compile", "1", IrKind::cuda_source, IrKind::ptx, {}, "builtin", run_nvrtc, nvrtc_key,
                the_cuda_toolkit});
  registry.add({"nvjitlink-link", "1", IrKind::ptx, IrKind::cubin, {}, "builtin", run_nvjitlink, nvjitlink_key,
                the_cuda_toolkit});
  registry.add({"libdevice-link", "1", IrKind::llvm, IrKind::llvm, {}, "builtin", run_libdevice_link, libdevice_key});
  registry.add({"nvvm-reflect", "1", IrKind::llvm, IrKind::llvm, {}, "builtin", run_nvvm_reflect_pass, llvm_toolchain_key});
  registry.add(
      {"llvm-passes", "1", IrKind::llvm, IrKind::llvm, {"pipeline"}, "builtin", run_llvm_passes_pass, llvm_toolchain_key});
  // 2: kernel bounds of both forms, cluster directives.
  registry.add({"nvptx-codegen", "2", IrKind::llvm, IrKind::ptx, {}, "builtin", run_nvptx_codegen, llvm_toolchain_key});
  // kjit's own rewriting: its version says all.
  registry.add({"ptx-retarget", "1", IrKind::ptx, IrKind::ptx, {}, "builtin", run_ptx_retarget, declares_nothing});
  register_amd_passes(registry);
  register_tileir_passes(registry);
  register_triton_passes(registry);
}

}  // namespace kjit
