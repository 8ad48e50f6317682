#include "server/compile/fatbin_compile.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "backends/bundle/offload_bundle.h"
#include "backends/nvfatbin/fatbin_builder.h"
#include "backends/nvfatbin/nvfatbin_api.h"
#include "convert/wire_convert.h"
#include "server/edge/compile_translation.h"

namespace kjit {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

// nvFatbin's spelling of a part's architecture: "90", "90a", "100f".
std::string fatbin_arch(const Target& target) {
  std::string arch = std::to_string(target.sm);
  if (target.suffix) arch += target.suffix;
  return arch;
}

std::string part_name(const CompileJob& job) {
  return job.target.canonical() + (job.wanted == ArtifactKind::ptx ? " (PTX)" : "");
}

// The whole fatbin's source: one tier when every part came from it,
// "compiled" when any part was compiled, else "mixed".
std::string combined_source(const std::vector<Result<CompileOutcome>>& outcomes) {
  std::set<std::string_view> sources;
  for (const Result<CompileOutcome>& outcome : outcomes) sources.insert(to_string(outcome->source));
  if (sources.size() == 1) return std::string(*sources.begin());
  if (sources.count(to_string(CacheSource::compiled))) return std::string(to_string(CacheSource::compiled));
  return "mixed";
}

// One part's entry, notes, log and timing in the response.
void add_part(const CompileJob& job, const Artifact& artifact, const CompileOutcome& outcome,
              v1::CompileResponse& response) {
  v1::FatbinEntry* entry = response.add_entries();
  entry->set_target(artifact.target);
  entry->set_kind(to_proto(artifact.kind));
  entry->set_size(artifact.bytes.size());
  entry->set_cache(std::string(to_string(outcome.source)));
  entry->set_key(artifact.key);
  entry->set_toolkit(artifact.toolkit);
  for (const KernelInfo& kernel : artifact.kernels) to_proto(kernel, *entry->add_kernels());
  for (const std::string& note : artifact.notes) {
    entry->add_notes(note);
    response.add_notes(part_name(job) + ": " + note);
  }
  if (!artifact.log.empty()) response.mutable_log()->append("== " + part_name(job) + "\n" + artifact.log);
  double part_ms = 0;
  for (const StageTiming& timing : outcome.timings) part_ms += timing.ms;
  v1::StageTiming* timing = response.add_timings();
  timing->set_stage(part_name(job));
  timing->set_ms(part_ms);
  for (const auto& [expression, lowered] : artifact.lowered_names)
    (*response.mutable_lowered_names())[expression] = lowered;
}

// hip: targets: the code objects in one clang offload bundle.
Status to_bundle_response(const std::vector<CompileJob>& jobs, const std::vector<Result<CompileOutcome>>& outcomes,
                          v1::CompileResponse& response) {
  std::vector<BundleEntry> entries;
  std::string targets_text;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Artifact& artifact = *outcomes[i]->artifact;
    add_part(jobs[i], artifact, *outcomes[i], response);
    // The code objects carry no target features (xnack, sramecc), so the
    // bare processor matches every variant of it.
    entries.push_back({hip_bundle_id("amdgcn-amd-amdhsa--" + jobs[i].target.processor), artifact.bytes});
    targets_text += (targets_text.empty() ? "" : ",") + artifact.target;
  }
  auto start = std::chrono::steady_clock::now();
  Result<std::string> bundle = write_offload_bundle(entries);
  if (!bundle) return make_error(ErrorCode::internal, "the code-object bundle: " + bundle.error().message);
  v1::StageTiming* timing = response.add_timings();
  timing->set_stage("offload-bundle");
  timing->set_ms(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  response.set_artifact(std::move(*bundle));
  response.set_artifact_kind(v1::ARTIFACT_KIND_HIP_BUNDLE);
  response.set_target(targets_text);
  response.set_cache(combined_source(outcomes));
  response.add_notes("code objects combined into a clang offload bundle (hipModuleLoadData loads it)");
  return Ok{};
}

}  // namespace

bool wants_fatbin(const v1::CompileRequest& request) {
  return request.targets_size() > 0 || request.artifact() == v1::ARTIFACT_KIND_FATBIN ||
         request.artifact() == v1::ARTIFACT_KIND_HIP_BUNDLE;
}

Result<std::vector<Target>> fatbin_targets(const v1::CompileRequest& request) {
  if (request.targets_size() > 0 && !request.target().empty())
    return invalid("set target or targets, not both");
  if (request.targets_size() > k_max_request_targets)
    return invalid(std::to_string(request.targets_size()) + " targets; a request may name at most " +
                   std::to_string(k_max_request_targets));
  std::vector<std::string> texts(request.targets().begin(), request.targets().end());
  if (texts.empty()) {
    if (request.target().empty()) return invalid("a fatbin needs its targets: set targets (\"cuda:80\", \"cuda:90\", ...)");
    texts.push_back(request.target());
  }
  std::vector<Target> targets;
  for (const std::string& text : texts) {
    Result<Target> target = parse_target(text);
    if (!target) return target.error();
    for (const Target& seen : targets)
      if (seen == *target) return invalid("target " + target->canonical() + " is named twice");
    targets.push_back(*target);
  }
  return targets;
}

Target fatbin_ptx_target(const std::vector<Target>& targets) {
  Target newest = *std::max_element(targets.begin(), targets.end(),
                                    [](const Target& a, const Target& b) { return a.sm < b.sm; });
  newest.suffix = '\0';
  return newest;
}

Result<std::vector<CompileJob>> to_fatbin_jobs(const v1::CompileRequest& request, const DaemonConfig& config) {
  Result<std::vector<Target>> targets = fatbin_targets(request);
  if (!targets) return targets.error();
  const bool amd = targets->front().is_amd();
  for (const Target& target : *targets)
    if (target.is_amd() != amd)
      return invalid("targets " + targets->front().canonical() + " and " + target.canonical() +
                     " are of two vendors; one request builds one fatbin or one code-object bundle");
  v1::CompileRequest part = request;
  part.clear_targets();
  std::vector<CompileJob> jobs;
  if (amd) {
    if (request.artifact() != v1::ARTIFACT_KIND_UNSPECIFIED && request.artifact() != v1::ARTIFACT_KIND_HIP_BUNDLE)
      return invalid("a request with several hip: targets is answered with a code-object bundle: leave artifact "
                     "unset or HIP_BUNDLE");
    for (const Target& target : *targets) {
      part.set_target(target.canonical());
      part.set_artifact(v1::ARTIFACT_KIND_HSACO);
      Result<CompileJob> job = to_compile_job(part, config);
      if (!job) return job.error();
      jobs.push_back(std::move(*job));
    }
    return jobs;
  }
  if (request.artifact() != v1::ARTIFACT_KIND_UNSPECIFIED && request.artifact() != v1::ARTIFACT_KIND_FATBIN)
    return invalid("a request with several targets is answered with a fatbin: leave artifact unset or FATBIN");

  for (const Target& target : *targets) {
    part.set_target(target.canonical());
    part.set_artifact(v1::ARTIFACT_KIND_CUBIN);
    Result<CompileJob> job = to_compile_job(part, config);
    if (!job) return job.error();
    jobs.push_back(std::move(*job));
  }
  part.set_target(fatbin_ptx_target(*targets).canonical());
  part.set_artifact(v1::ARTIFACT_KIND_PTX);
  Result<CompileJob> ptx = to_compile_job(part, config);
  if (!ptx) return ptx.error();
  jobs.push_back(std::move(*ptx));
  return jobs;
}

Status to_fatbin_response(const std::vector<CompileJob>& jobs, const std::vector<Result<CompileOutcome>>& outcomes,
                          const ToolkitRouting& toolkits, v1::CompileResponse& response) {
  std::vector<std::string> failed;
  const Error* first_error = nullptr;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (outcomes[i]) continue;
    failed.push_back(part_name(jobs[i]));
    if (!first_error) first_error = &outcomes[i].error();
  }
  if (first_error) {
    std::string names;
    for (const std::string& name : failed) names += (names.empty() ? "" : ", ") + name;
    return make_error(first_error->code,
                      std::to_string(failed.size()) + " of " + std::to_string(jobs.size()) + " parts failed (" + names +
                          "); " + failed.front() + ": " + first_error->message,
                      first_error->log);
  }

  if (jobs.front().target.is_amd()) return to_bundle_response(jobs, outcomes, response);

  const RoutedToolkit* fatbin_toolkit = toolkits.fatbin_toolkit();
  if (!fatbin_toolkit)
    return make_error(ErrorCode::failed_precondition,
                      "combining targets into a fatbin needs nvFatbin (libnvfatbin), which no CUDA toolkit here has: "
                      "install NVIDIA's nvidia-nvfatbin wheel (scripts/install-deps.sh puts it in the project's "
                      ".deps/cuda-wheels) or name a toolkit that has it in toolkit_paths");
  std::vector<FatbinPart> parts;
  std::string targets_text;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Artifact& artifact = *outcomes[i]->artifact;
    FatbinPart part;
    part.kind = artifact.kind == ArtifactKind::ptx ? FatbinPart::Kind::ptx : FatbinPart::Kind::cubin;
    part.arch = fatbin_arch(jobs[i].target);
    part.identifier = jobs[i].input_name + "@" + part.arch;
    part.data = artifact.bytes;
    parts.push_back(part);
    add_part(jobs[i], artifact, *outcomes[i], response);
    if (jobs[i].wanted != ArtifactKind::ptx) targets_text += (targets_text.empty() ? "" : ",") + artifact.target;
  }

  auto start = std::chrono::steady_clock::now();
  Result<const NvFatbinApi*> api = fatbin_toolkit->toolkit->nvfatbin();
  Result<std::string> fatbin = build_fatbin(**api, parts);
  if (!fatbin) return make_error(ErrorCode::internal, "nvFatbin " + fatbin_toolkit->describe() + ": " + fatbin.error().message);
  v1::StageTiming* timing = response.add_timings();
  timing->set_stage("nvfatbin");
  timing->set_ms(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());

  response.set_artifact(std::move(*fatbin));
  response.set_artifact_kind(v1::ARTIFACT_KIND_FATBIN);
  response.set_target(targets_text);
  response.set_cache(combined_source(outcomes));
  response.set_toolkit(fatbin_toolkit->describe());
  response.add_notes("fatbin combined by nvFatbin " + fatbin_toolkit->describe());
  return Ok{};
}

}  // namespace kjit
