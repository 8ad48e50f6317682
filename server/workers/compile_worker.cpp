#include "server/workers/compile_worker.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backends/nvrtc/nvrtc_pch.h"
#include "backends/triton/triton_build.h"
#include "backends/triton/triton_compile.h"
#include "backends/triton/triton_plugin_settings.h"
#include "pipeline/amd_passes.h"
#include "server/workers/compile_bounds.h"
#include "server/config/pipeline_setup.h"
#include "server/workers/worker_confinement.h"
#include "server/workers/worker_output.h"
#include "server/workers/worker_priority.h"
#include "server/workers/worker_protocol.h"
#include "target/target.h"

namespace kjit {
namespace {

worker::Outcome failure(const Error& error, bool bound_exceeded = false) {
  worker::Outcome outcome;
  worker::Failure& f = *outcome.mutable_failure();
  f.set_code(static_cast<int32_t>(error.code));
  f.set_message(error.message);
  f.set_log(error.log);
  f.set_bound_exceeded(bound_exceeded);
  return outcome;
}

// The private directory holds two: "work", the working directory and
// TMPDIR of every job, emptied after each, and "pch", the worker's
// precompiled headers (nvrtc_pch.h), kept across its jobs. A PCH holds what
// an earlier request's source included; being beside the working directory,
// not in it, it can be named in an include only with '..', which the
// include policy refuses.
constexpr const char* k_work_directory = "work";

// Files a toolchain left in the working directory belong to the request
// that made them: the next request starts with it empty.
void empty_directory(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) std::filesystem::remove_all(entry.path(), ec);
}

// NVRTC's PCH heap bounds one PCH; its file is a little larger than what
// the heap holds, and must stay under the worker's file-size bound
// (RLIMIT_FSIZE, compile_output_bytes), past which the kernel kills it.
// NVRTC's own default fits the headers measured (CUB, cuda::std with
// cuda/barrier, cuda_fp16/bf16 with cooperative_groups: 140-185 MB).
constexpr uint64_t k_pch_heap_bytes = 256ull << 20;
constexpr uint64_t k_pch_file_margin = 32ull << 20;
constexpr uint64_t k_smallest_pch_heap = 64ull << 20;

void enable_pch(const DaemonConfig& config, const std::string& private_dir) {
  if (!config.pch) return;
  const uint64_t output = config.compile_bounds.output_bytes;
  const uint64_t heap = output > k_pch_file_margin ? std::min(k_pch_heap_bytes, output - k_pch_file_margin) : 0;
  if (heap < k_smallest_pch_heap) {
    spdlog::info("compile worker: no precompiled headers: limits.compile_output_bytes leaves no room for one");
    return;
  }
  enable_nvrtc_auto_pch({private_dir + "/" + k_worker_pch_directory, config.pch_bytes, heap});
}

void set_pch_counts(worker::Outcome& outcome, const NvrtcPchCounts& before) {
  const NvrtcPchCounts after = nvrtc_pch_counts();
  if (after.hits == before.hits && after.creations == before.creations && after.fallbacks == before.fallbacks &&
      after.evictions == before.evictions && after.firsts == before.firsts)
    return;
  worker::PchCounts& pch = *outcome.mutable_pch();
  pch.set_hits(after.hits - before.hits);
  pch.set_creations(after.creations - before.creations);
  pch.set_fallbacks(after.fallbacks - before.fallbacks);
  pch.set_evictions(after.evictions - before.evictions);
  pch.set_firsts(after.firsts - before.firsts);
}

// Runs the plan the daemon derived: the worker derives no key of its own.
worker::Outcome compile(const CompilePipeline& pipeline, const worker::Job& wire, const DaemonConfig& config,
                        const WorkerClass& mine) {
  Result<WorkerJob> job = from_worker_job(wire, config);
  if (!job) return failure(job.error());
  // The pool never sends a job of the other kind; refused all the same, so
  // that the one kind of worker that may start programs parses no CUDA C++
  // or LLVM IR, and a Tile IR job never fails obscurely on a refused execve.
  if (worker_class_for(job->job, mine.background) != mine)
    return failure(make_error(ErrorCode::internal, "compile worker: a " + mine.name() +
                                                       " worker was sent a job of another class (" +
                                                       job->job.input_name + ")"));
  Result<Artifact> artifact = pipeline.run(job->job, job->plan, job->caller_namespace);
  if (mine.triton) {
    // A Triton job ran in a child of the build's interpreter, under bounds
    // of its own: one it crossed stopped that child, not this worker.
    if (std::optional<std::string> bound = take_triton_job_bound(); bound && !artifact) {
      worker::Outcome outcome = failure(artifact.error());
      outcome.mutable_failure()->set_job_bound(*bound);
      return outcome;
    }
  }
  if (std::optional<Error> crossed = bound_crossed_by(artifact, config.compile_bounds)) return failure(*crossed, true);
  if (!artifact) return failure(artifact.error());
  return artifact_outcome(std::move(artifact.value()));
}

int serve_jobs(const CompilePipeline& pipeline, int fd, const DaemonConfig& config, const std::string& work_dir,
               const WorkerClass& mine) {
  std::string bytes;
  while (true) {
    switch (read_frame(fd, bytes, std::nullopt)) {
      case FrameRead::ok: break;
      case FrameRead::closed: return 0;  // the daemon is done with this worker
      default:
        spdlog::error("compile worker: cannot read a job");
        return 1;
    }
    // The daemon keeps this job's stderr lines from here on, for its error.
    fmt::print(stderr, "{}\n", WorkerOutput::k_job_marker);
    std::fflush(stderr);
    start_compile_cpu_bound(config.compile_bounds);
    const NvrtcPchCounts pch_before = nvrtc_pch_counts();
    worker::Job job;
    worker::Outcome outcome = job.ParseFromString(bytes)
                                  ? compile(pipeline, job, config, mine)
                                  : failure(make_error(ErrorCode::internal, "compile worker: a job does not parse"));
    set_pch_counts(outcome, pch_before);
    empty_directory(work_dir);
    fmt::print(stderr, "{}\n", WorkerOutput::k_job_end_marker);
    std::fflush(stderr);
    if (Status written = write_frame(fd, outcome); !written) {
      spdlog::error("{}", written.error().message);
      return 1;
    }
    if (outcome.has_failure() && outcome.failure().bound_exceeded()) return 0;
  }
}

// Each Triton job's child is bounded as a compile worker is, from zero;
// its time ends a little before the daemon's own deadline for the job, so
// that the worker answers which bound stopped it and lives on.
TritonJobBounds triton_job_bounds(const DaemonConfig& config) {
  const auto timeout = std::chrono::milliseconds(config.compile_timeout_s * 1000);
  const auto margin = std::min(std::chrono::milliseconds(3000), timeout / 10);
  return {config.compile_bounds.cpu_seconds, config.compile_bounds.memory_bytes, timeout - margin};
}

// A prestarted Triton worker compiles Triton's own small probe kernel once,
// confined as its jobs are: the build imported, its back end and MLIR
// context loaded, the configured plugins too. What goes wrong is left to
// the first job to report.
void warm_triton_build(const DaemonConfig& config, const std::string& name) {
  const TritonBuild* build = find_triton_build(name);
  if (!build) return;
  Result<Target> target = parse_target(config.default_target);
  if (!target || !build->builds(*target)) {
    if (!build->cuda_archs.empty()) target = parse_target("cuda:" + std::to_string(build->cuda_archs.front()));
    else if (!build->hip_archs.empty()) target = parse_target("hip:" + build->hip_archs.front());
  }
  if (!target) return;
  const auto began = std::chrono::steady_clock::now();
  Result<TritonPipeline> warmed = describe_triton_pipeline(*build, *target, config.triton_plugins, /*warm_up=*/true);
  // An interpreter whose warm-up at idle priority a busy machine starved
  // ends itself (status 75): warmed again at ordinary priority, since a
  // client compile would otherwise wait for the same work.
  if (!warmed && warmed.error().message.find("exited with status 75") != std::string::npos) {
    spdlog::info("compile worker: warming {} at idle priority took too long; warming it at ordinary priority", name);
    warmed = describe_triton_pipeline(*build, *target, config.triton_plugins, /*warm_up=*/false);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  if (warmed) spdlog::debug("compile worker: {} warm for {} in {} ms", name, target->canonical(), ms.count());
  else spdlog::warn("compile worker: warming {} for {} failed: {}", name, target->canonical(), warmed.error().message);
}

}  // namespace

Result<WorkerSetup> read_worker_setup(int fd) {
  std::string bytes;
  worker::Setup setup;
  if (read_frame(fd, bytes, std::nullopt) != FrameRead::ok || !setup.ParseFromString(bytes))
    return make_error(ErrorCode::internal, "compile worker: no setup from the daemon");
  WorkerSetup out{setup.config_text(),
                  setup.config_path(),
                  setup.private_dir(),
                  std::nullopt,
                  WorkerClass{setup.tileir(), setup.background(), setup.triton()},
                  {},
                  {setup.triton_warm_builds().begin(), setup.triton_warm_builds().end()}};
  for (const worker::TritonBuildSetup& build : setup.triton_builds())
    out.triton_builds.emplace_back(build.python(), build.description());
  if (setup.toolkits_handed()) {
    out.toolkits.emplace();
    for (const worker::ToolkitHome& toolkit : setup.toolkits()) {
      ToolkitHome& home = out.toolkits->emplace_back(ToolkitHome{toolkit.origin(), toolkit.home(), std::nullopt});
      if (toolkit.facts_given())
        home.facts = ToolkitFacts{toolkit.version(), {toolkit.archs().begin(), toolkit.archs().end()},
                                  toolkit.has_nvrtc(), toolkit.has_nvjitlink(), toolkit.has_nvfatbin()};
    }
  }
  return out;
}

[[noreturn]] void worker_main(const DaemonConfig& config, const WorkerSetup& setup, int fd) {
  // The daemon logs each line a worker writes with its own time and the
  // worker's pid, and keeps the last ones for the request's error.
  spdlog::default_logger()->set_pattern("%l: %v");
  // A worker says what the daemon already said at start-up only when asked.
  spdlog::set_level(std::max(spdlog::level::from_str(config.log_level), spdlog::level::warn));
  const int code = run_worker_process(config, setup, fd);
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  std::_Exit(code);
}

int run_worker_process(const DaemonConfig& config, const WorkerSetup& setup, int fd) {
  // First, while this is the process's one thread: threads started later
  // (by the toolchains) inherit the priority, and loading them already
  // yields to clients.
  std::string priority;
  if (setup.worker_class.background) {
    Result<std::string> lowered = lower_to_background_priority();
    if (!lowered) {
      spdlog::error("compile worker: {}", lowered.error().message);
      return 3;
    }
    priority = ", CPU priority " + *lowered;
  }
  auto pipeline = make_compile_pipeline(config, setup.toolkits ? &*setup.toolkits : nullptr);
  if (!pipeline) {
    spdlog::error("{}", pipeline.error().message);
    return 1;
  }
  // Toolchains write their temporary files, and NVRTC looks for quoted
  // includes, in the private directory: nothing of the host's is there.
  const std::string work_dir = setup.private_dir + "/" + k_work_directory;
  if (setup.private_dir.empty() || ::mkdir(work_dir.c_str(), 0700) != 0 || ::chdir(work_dir.c_str()) != 0) {
    spdlog::error("compile worker: cannot enter its private directory '{}'", setup.private_dir);
    return 1;
  }
  ::setenv("TMPDIR", work_dir.c_str(), 1);
  if (setup.worker_class.triton) {
    std::vector<TritonBuild> builds;
    for (const auto& [python, description] : setup.triton_builds) {
      Result<TritonBuild> build = parse_triton_build(description, python);
      if (!build) {
        spdlog::error("compile worker: {}", build.error().message);
        return 1;
      }
      builds.push_back(std::move(build.value()));
    }
    // The daemon checked these at its start; a worker gives them alike.
    if (Status configured = configure_triton_plugins(builds, config.triton_plugin_settings); !configured) {
      spdlog::error("compile worker: {}", configured.error().message);
      return 1;
    }
    set_triton_builds(std::move(builds));
    // Its interpreters keep their own directories across jobs; work/ is
    // emptied after each.
    set_triton_home(setup.private_dir + "/triton");
    set_triton_job_bounds(triton_job_bounds(config));
  }
  enable_pch(config, setup.private_dir);
  allow_hiprtc_in_this_process();
  std::string confinement = "unconfined (sandbox = \"off\")";
  if (config.sandbox != "off") {
    Result<std::string> confined = confine_worker(config, **pipeline, setup.private_dir, setup.worker_class);
    if (!confined) {
      spdlog::error("compile worker: cannot confine itself: {}", confined.error().message);
      return 3;
    }
    confinement = std::move(confined.value());
  }
  Result<std::string> bounded = apply_worker_bounds(config.compile_bounds, setup.worker_class.triton);
  if (!bounded) {
    spdlog::error("compile worker: {}", bounded.error().message);
    return 3;
  }
  if (setup.worker_class.triton)
    for (const std::string& build : setup.triton_warm_builds) warm_triton_build(config, build);
  worker::Ready ready;
  ready.set_confinement(confinement + "; bounds: " + *bounded + "; class: " + setup.worker_class.name() + priority);
  if (Status sent = write_frame(fd, ready); !sent) return 1;
  return serve_jobs(**pipeline, fd, config, work_dir, setup.worker_class);
}

}  // namespace kjit
