#include "pipeline/amd_passes.h"

#include "pipeline/builtin_passes.h"

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "backends/amdgpu/amdgpu_codegen.h"
#include "backends/amdgpu/hsaco_link.h"
#include "backends/hiprtc/hiprtc_api.h"
#include "backends/hiprtc/hiprtc_stage.h"
#include "backends/llvm/llvm_module.h"
#include "backends/nvrtc/include_policy.h"
#include "pipeline/hip_options.h"

namespace kjit {
namespace {

// Where HIPRTC is, found once per process without loading it: the daemon
// needs its version for keys, and only compile workers ever load it.
const std::optional<HiprtcLocation>& hiprtc_location() {
  static const std::optional<HiprtcLocation> location = find_hiprtc();
  return location;
}

// HIPRTC declares the HIP runtime's device API itself; a kernel's include of
// the runtime header would otherwise send it to the host's /usr/include.
// The header is supplied empty unless the request brings its own.
constexpr std::string_view k_hip_runtime_header = "hip/hip_runtime.h";
constexpr std::string_view k_hip_runtime_stand_in = "// HIPRTC declares the HIP runtime's device API itself.\n";

std::atomic<bool> g_hiprtc_allowed{false};

// HIPRTC loaded once per (worker) process.
Result<std::shared_ptr<const HiprtcApi>> loaded_hiprtc(const HiprtcLocation& location) {
  static std::mutex mutex;
  static std::shared_ptr<const HiprtcApi> api;
  std::lock_guard lock(mutex);
  if (api) return api;
  Result<std::shared_ptr<const HiprtcApi>> loaded = load_hiprtc(location);
  if (loaded) api = *loaded;
  return loaded;
}

Result<HipOptions> options_of(const PassContext& ctx) {
  return check_hip_options(ctx.job.input_kind, ctx.job.options, ctx.job.target.amd_arch());
}

Result<PassOutput> run_hiprtc(PassContext& ctx, std::string_view source) {
  if (!g_hiprtc_allowed)
    return make_error(ErrorCode::failed_precondition,
                      "HIP source compiles only in compile workers (HIPRTC aborts the process it runs in on some "
                      "inputs), and this daemon runs compiles in its own process (compile_workers = 0)");
  const std::optional<HiprtcLocation>& location = hiprtc_location();
  if (!location)
    return make_error(ErrorCode::failed_precondition,
                      "HIP source needs HIPRTC, which this host does not have (looked for libamdhip64.so.5, "
                      "libamdhip64.so and libhiprtc.so; install Debian's libamdhip64-dev or set KJIT_HIPRTC_LIBRARY). "
                      "LLVM IR for hip: targets builds without it");
  if (location->version.empty()) {
    std::error_code error;
    if (!std::filesystem::exists(location->path, error))
      return make_error(ErrorCode::failed_precondition,
                        "HIPRTC was named at " + location->path + " (KJIT_HIPRTC_LIBRARY), which does not exist");
    // Which processors it builds follows from its ROCm release; without it,
    // any processor could be one it aborts on.
    return make_error(ErrorCode::failed_precondition,
                      "cannot tell the ROCm release of the HIPRTC at " + location->path +
                          " from its file name (libamdhip64.so.<version>); name the versioned file in "
                          "KJIT_HIPRTC_LIBRARY");
  }
  const AmdArchInfo& arch = ctx.job.target.amd_arch();
  // An older HIPRTC aborts the whole process on a processor it does not
  // know: refuse before it is called.
  if (!hiprtc_builds(arch, location->version))
    return make_error(ErrorCode::invalid_argument,
                      "target " + ctx.job.target.canonical() + " is not supported by the installed HIPRTC " +
                          location->version + " (" + location->path + "); " + std::string(arch.processor) +
                          " needs ROCm " + std::string(arch.min_rocm_hiprtc) +
                          " or newer; targets this HIPRTC builds: " + describe_hiprtc_targets(location->version) +
                          ". LLVM IR builds for " + ctx.job.target.canonical() + " here (pipeline llvm-amdgpu)");
  if (Status s = check_include_policy(source, ctx.job.input_name, ctx.job.headers); !s) return s.error();
  Result<HipOptions> options = options_of(ctx);
  if (!options) return options.error();
  Result<std::shared_ptr<const HiprtcApi>> api = loaded_hiprtc(*location);
  if (!api) return api.error();

  std::map<std::string, std::string> headers = ctx.job.headers;
  headers.emplace(k_hip_runtime_header, k_hip_runtime_stand_in);
  HipCompileRequest request;
  request.source = source;
  request.name = ctx.job.input_name;
  request.headers = &headers;
  request.name_expressions = ctx.job.name_expressions;
  request.processor = ctx.job.target.processor;
  request.options = options->hiprtc;
  for (const AmdArchInfo& known : known_amd_archs())
    if (hiprtc_builds(known, location->version)) request.allowed_processors.emplace_back(known.processor);
  Result<HsacoOutput> out = compile_hip_to_hsaco(**api, request);
  if (!out) return out.error();
  ctx.lowered_names = std::move(out->lowered_names);
  return PassOutput{std::move(out->hsaco), std::move(out->log)};
}

Result<PassOutput> run_amdgpu_codegen(PassContext& ctx, std::string_view ir) {
  Result<HipOptions> options = options_of(ctx);
  if (!options) return options.error();
  AmdgpuCodegenRequest request;
  request.ir = ir;
  request.name = ctx.job.input_name;
  request.processor = ctx.job.target.processor;
  request.features = options->llvm_features();
  request.code_object_version = options->code_object_version.value_or(k_default_code_object_version);
  Result<std::string> object = amdgpu_codegen(request);
  if (!object) return object.error();
  return PassOutput{std::move(*object), {}};
}

Result<PassOutput> run_lld_link(PassContext& ctx, std::string_view object) {
  Result<HsacoLinkOutput> linked = link_hsaco(object, ctx.job.input_name);
  if (!linked) return linked.error();
  return PassOutput{std::move(linked->hsaco), std::move(linked->log)};
}

}  // namespace

void allow_hiprtc_in_this_process() { g_hiprtc_allowed = true; }

// HIPRTC's version and file, and the request's name, which is the source's
// __FILE__ (see hiprtc_stage.cpp): two names, two code objects.
std::vector<KeyComponent> hiprtc_key(const CompileJob& job, const CudaToolkit&) {
  const std::optional<HiprtcLocation>& location = hiprtc_location();
  return {{"input.name", job.input_name},
          {"toolchain.hiprtc", location ? location->version + " " + location->path : "none"}};
}

namespace {

// What built an artifact, as each pass names its toolchain: "HIPRTC
// 5.2.21153 (/usr/lib/.../libamdhip64.so.5)", "LLVM 19.1.7 + lld".
std::string hiprtc_name(const std::string&) {
  const std::optional<HiprtcLocation>& location = hiprtc_location();
  return location ? "HIPRTC " + location->version + " (" + location->path + ")" : "HIPRTC (not installed)";
}

std::string llvm_name(const std::string&) { return "LLVM " + llvm_version(); }

std::string lld_name(const std::string&) { return "lld"; }

}  // namespace

void register_amd_passes(PassRegistry& registry) {
  registry.add(
      {"hiprtc-compile", "1", IrKind::hip_source, IrKind::hsaco, {}, "builtin", run_hiprtc, hiprtc_key, hiprtc_name});
  registry.add({"amdgpu-codegen", "1", IrKind::llvm, IrKind::amdgcn_object, {}, "builtin", run_amdgpu_codegen,
                llvm_toolchain_key, llvm_name});
  // lld is LLVM's own linker, of the same release.
  registry.add({"lld-link", "1", IrKind::amdgcn_object, IrKind::hsaco, {}, "builtin", run_lld_link, llvm_toolchain_key,
                lld_name});
}

}  // namespace kjit
