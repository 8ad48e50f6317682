#include "server/fatbin_compile.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "backends/nvfatbin/fatbin_builder.h"
#include "backends/nvfatbin/nvfatbin_api.h"
#include "convert/wire_convert.h"
#include "server/compile_translation.h"

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

}  // namespace

bool wants_fatbin(const v1::CompileRequest& request) {
  return request.targets_size() > 0 || request.artifact() == v1::ARTIFACT_KIND_FATBIN;
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
  if (request.artifact() != v1::ARTIFACT_KIND_UNSPECIFIED && request.artifact() != v1::ARTIFACT_KIND_FATBIN)
    return invalid("a request with several targets is answered with a fatbin: leave artifact unset or FATBIN");
  Result<std::vector<Target>> targets = fatbin_targets(request);
  if (!targets) return targets.error();

  v1::CompileRequest part = request;
  part.clear_targets();
  std::vector<CompileJob> jobs;
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

    v1::FatbinEntry* entry = response.add_entries();
    entry->set_target(artifact.target);
    entry->set_kind(to_proto(artifact.kind));
    entry->set_size(artifact.bytes.size());
    entry->set_cache(std::string(to_string(outcomes[i]->source)));
    entry->set_key(artifact.key);
    entry->set_toolkit(artifact.toolkit);
    for (const KernelInfo& kernel : artifact.kernels) to_proto(kernel, *entry->add_kernels());
    for (const std::string& note : artifact.notes) {
      entry->add_notes(note);
      response.add_notes(part_name(jobs[i]) + ": " + note);
    }
    if (!artifact.log.empty()) response.mutable_log()->append("== " + part_name(jobs[i]) + "\n" + artifact.log);
    double part_ms = 0;
    for (const StageTiming& timing : outcomes[i]->timings) part_ms += timing.ms;
    v1::StageTiming* timing = response.add_timings();
    timing->set_stage(part_name(jobs[i]));
    timing->set_ms(part_ms);
    if (jobs[i].wanted != ArtifactKind::ptx) targets_text += (targets_text.empty() ? "" : ",") + artifact.target;
    for (const auto& [expression, lowered] : artifact.lowered_names)
      (*response.mutable_lowered_names())[expression] = lowered;
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
