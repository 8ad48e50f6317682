#include "server/edge/compile_translation.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "backends/triton/triton_build.h"
#include "convert/wire_convert.h"
#include "core/hex.h"
#include "core/input_kinds.h"
#include "pipeline/compile_options.h"
#include "pipeline/hip_options.h"
#include "pipeline/triton_request_edit.h"

namespace kjit {
namespace {

constexpr size_t k_max_name_bytes = 255;

Error invalid(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

Error too_large(const std::string& what, uint64_t size, uint64_t limit, const char* setting) {
  return make_error(ErrorCode::resource_exhausted, what + " is " + std::to_string(size) + " bytes; the daemon's limit is " +
                                                       std::to_string(limit) + " (limits." + setting + ")");
}

bool has_nul(std::string_view text) { return text.find('\0') != std::string_view::npos; }

// "\x7fTileIR\x00" for a message: printable ASCII as is, the rest in hex.
std::string printable_bytes(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x" + hex_lower(&c, 1);
    }
  }
  return out;
}

// The input name only labels diagnostics; NVRTC also resolves quoted
// includes next to it, so keep the last path component alone.
std::string display_name(const std::string& given, InputKind kind) {
  size_t slash = given.find_last_of("/\\");
  std::string name = slash == std::string::npos ? given : given.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") name = input_kind_info(kind).default_file_name;
  if (name.size() > k_max_name_bytes) {
    // Cut before a character, not inside one: the name travels on in proto
    // strings, which must stay UTF-8.
    size_t cut = k_max_name_bytes;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name.resize(cut);
  }
  return name;
}

// "cuda-source, ptx, llvm-ir, llvm-bitcode or hip-source"
std::string kind_names() {
  std::string names;
  std::span<const InputKindInfo> kinds = input_kinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    names += std::string(i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + std::string(kinds[i].name);
  return names;
}

// The request's triton_plugins_off: each a plugin of the build (as `kjit
// toolkits` names it: an installed package's distribution, a configured
// library's path, one of [triton] plugins) or "*", sorted, each once.
Result<std::vector<std::string>> plugins_switched_off(const v1::CompileRequest& request, const TritonBuild& build,
                                                      const DaemonConfig& config) {
  std::vector<std::string> known = build.plugin_names();
  known.insert(known.end(), config.triton_plugins.begin(), config.triton_plugins.end());
  if (static_cast<uint64_t>(request.triton_plugins_off_size()) > known.size() + 1)
    return invalid("triton_plugins_off names " + std::to_string(request.triton_plugins_off_size()) +
                   " plugins; Triton build '" + build.name + "' has " + std::to_string(known.size()));
  std::set<std::string> off;
  for (const std::string& name : request.triton_plugins_off()) {
    if (name != "*" && std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return invalid("triton_plugins_off: '" + name + "' is no plugin of Triton build '" + build.name + "' (its plugins: " +
                     (list.empty() ? std::string("none") : list) + "; \"*\" for all)");
    }
    off.insert(name);
  }
  return std::vector<std::string>(off.begin(), off.end());
}

}  // namespace

Result<CompileJob> to_compile_job(const v1::CompileRequest& request, const DaemonConfig& config) {
  CompileJob job;
  std::optional<InputKind> kind = from_proto(request.input().kind());
  if (!kind) return invalid("input.kind is required: " + kind_names());
  job.input_kind = *kind;
  const InputKindInfo& kind_info = input_kind_info(job.input_kind);

  const std::string& data = request.input().data();
  if (data.empty()) return invalid("the input is empty");
  if (data.size() > config.max_input_bytes) return too_large("the input", data.size(), config.max_input_bytes, "max_input_bytes");
  if (kind_info.text && has_nul(data))
    return invalid("the input contains a NUL byte; " + std::string(to_string(job.input_kind)) + " input must be text");
  // A binary kind's header, before any toolchain parses the rest.
  if (!data.starts_with(kind_info.magic))
    return invalid("the input is not " + std::string(to_string(job.input_kind)) + ": it does not start with " +
                   std::string(to_string(job.input_kind)) + "'s header (" + printable_bytes(kind_info.magic) + ")");
  job.input = data;
  job.input_name = display_name(request.input().name(), job.input_kind);

  const std::string& target_text = request.target().empty() ? config.default_target : request.target();
  Result<Target> target = parse_target(target_text);
  if (!target) return target.error();
  job.target = *target;

  if (static_cast<uint64_t>(request.options_size()) > config.max_options)
    return make_error(ErrorCode::resource_exhausted, std::to_string(request.options_size()) +
                                                         " options; the daemon's limit is " +
                                                         std::to_string(config.max_options) + " (limits.max_options)");
  std::vector<std::string> options(request.options().begin(), request.options().end());
  const bool triton = kind_info.options == OptionFamily::triton;
  if (!triton &&
      (request.triton_options_size() > 0 || !request.triton_build().empty() || request.triton_edits_size() > 0 ||
       request.triton_plugins_off_size() > 0))
    return invalid("triton_options, triton_build, triton_edits and triton_plugins_off apply to Triton input only");
  if (triton) {
    if (!options.empty())
      return invalid("Triton input takes Triton's own options (triton_options: num_warps, num_stages, ...), not "
                     "compiler flags such as '" + options.front() + "'");
    if (static_cast<uint64_t>(request.triton_options_size()) > config.max_options)
      return make_error(ErrorCode::resource_exhausted, std::to_string(request.triton_options_size()) +
                                                           " Triton options; the daemon's limit is " +
                                                           std::to_string(config.max_options) + " (limits.max_options)");
    Result<const TritonBuild*> build = choose_triton_build(request.triton_build(), data);
    if (!build) return build.error();
    if (!(*build)->builds(job.target)) {
      std::string builds;
      for (uint32_t sm : (*build)->cuda_archs) builds += (builds.empty() ? "cuda:" : ", cuda:") + std::to_string(sm);
      for (const std::string& gfx : (*build)->hip_archs) builds += (builds.empty() ? "hip:" : ", hip:") + gfx;
      // What is missing is a toolchain on this machine, not something the
      // request could say otherwise: an assembler for the arch (a newer
      // Triton build's ptxas would be lent to it), or the back end.
      std::string missing;
      if (!job.target.is_amd())
        for (const TritonPtxas& ptxas : (*build)->ptxas)
          missing += "; its " + std::filesystem::path(ptxas.path).filename().string() + " " + ptxas.version;
      return make_error(ErrorCode::failed_precondition,
                        "Triton build '" + (*build)->name + "' does not build " + job.target.canonical() +
                            (missing.empty() ? std::string()
                                             : missing + " does not know it, and no Triton build here has a newer "
                                                         "ptxas-blackwell that its Triton compiles with for it") +
                            "; it builds " + builds);
    }
    std::map<std::string, std::string> given(request.triton_options().begin(), request.triton_options().end());
    Result<std::vector<std::string>> checked = check_triton_options(**build, job.target, given);
    if (!checked) return checked.error();
    job.options = std::move(checked.value());
    job.triton_build = (*build)->name;
    if (static_cast<uint64_t>(request.triton_edits_size()) > config.max_options)
      return make_error(ErrorCode::resource_exhausted,
                        std::to_string(request.triton_edits_size()) + " Triton edits; the daemon's limit is " +
                            std::to_string(config.max_options) + " (limits.max_options)");
    for (const v1::TritonEdit& given : request.triton_edits()) {
      TritonEdit edit = from_proto(given);
      // Checked here, so that a malformed edit is the caller's error before
      // any queue; the plan checks it again for jobs that come from recipes.
      if (Result<PipelineEdit> checked_edit = requested_triton_edit(edit, job.triton_edits.size()); !checked_edit)
        return checked_edit.error();
      job.triton_edits.push_back(std::move(edit));
    }
    Result<std::vector<std::string>> off = plugins_switched_off(request, **build, config);
    if (!off) return off.error();
    job.triton_plugins_off = std::move(off.value());
  } else if (job.target.is_amd()) {
    Result<HipOptions> checked = check_hip_options(job.input_kind, options, job.target.amd_arch());
    if (!checked) return checked.error();
    job.options = std::move(checked->normalized);
  } else {
    Result<CheckedOptions> checked = check_options(job.input_kind, options);
    if (!checked) return checked.error();
    job.options = std::move(checked->normalized);
  }
  const bool source = kind_info.source;

  if (static_cast<uint64_t>(request.headers_size()) > config.max_headers)
    return make_error(ErrorCode::resource_exhausted, std::to_string(request.headers_size()) +
                                                         " headers; the daemon's limit is " +
                                                         std::to_string(config.max_headers) + " (limits.max_headers)");
  if (!source && request.headers_size() > 0) return invalid("headers apply to CUDA C++ and HIP source only");
  uint64_t header_bytes = 0;
  for (const auto& [name, content] : request.headers()) {
    if (name.empty() || has_nul(name)) return invalid("a header has an empty or malformed name");
    if (has_nul(content)) return invalid("header '" + name + "' contains a NUL byte");
    header_bytes += name.size() + content.size();
    job.headers.emplace(name, content);
  }
  if (header_bytes > config.max_header_bytes)
    return too_large("the headers together", header_bytes, config.max_header_bytes, "max_header_bytes");

  if (static_cast<uint64_t>(request.name_expressions_size()) > config.max_name_expressions)
    return make_error(ErrorCode::resource_exhausted, "too many name expressions; the daemon's limit is " +
                                                         std::to_string(config.max_name_expressions));
  if (!source && request.name_expressions_size() > 0)
    return invalid("name expressions apply to CUDA C++ and HIP source only");
  for (const std::string& expression : request.name_expressions()) {
    if (expression.empty() || has_nul(expression)) return invalid("a name expression is empty or malformed");
    job.name_expressions.push_back(expression);
  }

  // FATBIN and several targets take the fatbin path (fatbin_compile.h); a
  // job is one artifact for one target.
  if (request.targets_size() > 0) return invalid("targets name a fatbin's parts; a single compile takes target");
  if (job.target.is_amd()) {
    // A hip: target gets a code object; UNSPECIFIED means HSACO.
    if (request.artifact() != v1::ARTIFACT_KIND_UNSPECIFIED && request.artifact() != v1::ARTIFACT_KIND_HSACO)
      return invalid("artifact " + std::to_string(request.artifact()) + " is not HSACO, what " +
                     job.target.canonical() + " gets");
    job.wanted = ArtifactKind::hsaco;
  } else {
    if (request.artifact() != v1::ARTIFACT_KIND_UNSPECIFIED && request.artifact() != v1::ARTIFACT_KIND_CUBIN &&
        request.artifact() != v1::ARTIFACT_KIND_PTX)
      return invalid("artifact " + std::to_string(request.artifact()) + " is not CUBIN or PTX");
    job.wanted = from_proto(request.artifact());
    if (triton && job.wanted != ArtifactKind::cubin)
      return invalid("Triton input gets a cubin for a cuda: target (a code object for hip:), one target per "
                     "request: no PTX, no fatbin");
  }
  job.pipeline = request.pipeline();
  if (static_cast<uint64_t>(request.pass_args_size()) > config.max_options)
    return make_error(ErrorCode::resource_exhausted, "too many pass arguments; the daemon's limit is " +
                                                         std::to_string(config.max_options) + " (limits.max_options)");
  for (const auto& [key, value] : request.pass_args()) job.pass_args[key] = value;
  job.allow_ptx_fallback = request.allow_ptx_fallback();
  if (job.allow_ptx_fallback && job.target.is_amd()) return invalid("allow_ptx_fallback applies to cuda: targets only");
  return job;
}

void to_compile_request(const CompileJob& job, v1::CompileRequest& request) {
  request.mutable_input()->set_kind(to_proto(job.input_kind));
  request.mutable_input()->set_data(job.input);
  request.mutable_input()->set_name(job.input_name);
  request.set_target(job.target.canonical());
  if (input_kind_info(job.input_kind).options == OptionFamily::triton) {
    for (const std::string& option : job.options) {
      const size_t eq = option.find('=');
      (*request.mutable_triton_options())[option.substr(0, eq)] = eq == std::string::npos ? "" : option.substr(eq + 1);
    }
    request.set_triton_build(job.triton_build);
    for (const TritonEdit& edit : job.triton_edits) to_proto(edit, *request.add_triton_edits());
    for (const std::string& name : job.triton_plugins_off) request.add_triton_plugins_off(name);
  } else {
    for (const std::string& option : job.options) request.add_options(option);
  }
  for (const auto& [name, content] : job.headers) (*request.mutable_headers())[name] = content;
  for (const std::string& expression : job.name_expressions) request.add_name_expressions(expression);
  request.set_artifact(to_proto(job.wanted));
  request.set_pipeline(job.pipeline);
  for (const auto& [key, value] : job.pass_args) (*request.mutable_pass_args())[key] = value;
  request.set_allow_ptx_fallback(job.allow_ptx_fallback);
}

void to_compile_response(const Artifact& artifact, const std::vector<StageTiming>& timings,
                         v1::CompileResponse& response) {
  response.set_artifact(artifact.bytes);
  response.set_artifact_kind(to_proto(artifact.kind));
  response.set_target(artifact.target);
  for (const StageTiming& timing : timings) {
    v1::StageTiming* out = response.add_timings();
    out->set_stage(timing.stage);
    out->set_ms(timing.ms);
    for (const PassTiming& pass : timing.passes) {
      v1::PassTiming* p = out->add_passes();
      p->set_pass(pass.pass);
      p->set_ms(pass.ms);
    }
  }
  response.set_key(artifact.key);
  for (const KeyComponent& c : artifact.key_components) {
    v1::KeyComponent* out = response.add_key_components();
    out->set_name(c.name);
    out->set_value(c.value);
  }
  response.set_pipeline(artifact.pipeline);
  response.set_toolkit(artifact.toolkit);
  response.set_triton_metadata(artifact.triton_metadata);
  response.set_triton_build(artifact.triton_build);
  response.mutable_triton_files()->insert(artifact.triton_files.begin(), artifact.triton_files.end());
  for (const std::string& note : artifact.notes) response.add_notes(note);
  response.set_log(artifact.log);
  for (const KernelInfo& kernel : artifact.kernels) to_proto(kernel, *response.add_kernels());
  for (const auto& [expression, lowered] : artifact.lowered_names) (*response.mutable_lowered_names())[expression] = lowered;
}

}  // namespace kjit
