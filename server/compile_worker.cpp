#include "compile_worker.h"

#include <spdlog/spdlog.h>

#include <string>

#include "cache/cache_entry.h"
#include "worker_protocol.h"

namespace kjit {
namespace {

worker::Outcome failure(const Error& error) {
  worker::Outcome outcome;
  worker::Failure& f = *outcome.mutable_failure();
  f.set_code(static_cast<int32_t>(error.code));
  f.set_message(error.message);
  f.set_log(error.log);
  return outcome;
}

worker::Outcome compile(const CompilePipeline& pipeline, const worker::Job& wire) {
  Result<CompileJob> job = from_worker_job(wire);
  if (!job) return failure(job.error());
  Result<CompilePipeline::Plan> plan = pipeline.plan(*job);
  if (!plan) return failure(plan.error());
  Result<Artifact> artifact = pipeline.run(*job, *plan);
  if (!artifact) return failure(artifact.error());
  // The entry format carries the artifact and its key across; compile_ms
  // and created_unix are the daemon's to set when it caches the result.
  CacheEntry entry;
  entry.key = plan->key.hex;
  entry.artifact = std::move(artifact.value());
  worker::Outcome outcome;
  outcome.set_entry(encode_entry(entry));
  return outcome;
}

}  // namespace

Result<WorkerSetup> read_worker_setup(int fd) {
  std::string bytes;
  worker::Setup setup;
  if (read_frame(fd, bytes, std::nullopt) != FrameRead::ok || !setup.ParseFromString(bytes))
    return make_error(ErrorCode::internal, "compile worker: no setup from the daemon");
  return WorkerSetup{setup.config_text(), setup.config_path()};
}

int run_compile_worker(const CompilePipeline& pipeline, int fd) {
  std::string bytes;
  while (true) {
    switch (read_frame(fd, bytes, std::nullopt)) {
      case FrameRead::ok: break;
      case FrameRead::closed: return 0;  // the daemon is done with this worker
      default:
        spdlog::error("compile worker: cannot read a job");
        return 1;
    }
    worker::Job job;
    worker::Outcome outcome = job.ParseFromString(bytes)
                                  ? compile(pipeline, job)
                                  : failure(make_error(ErrorCode::internal, "compile worker: a job does not parse"));
    if (Status written = write_frame(fd, outcome); !written) {
      spdlog::error("{}", written.error().message);
      return 1;
    }
  }
}

}  // namespace kjit
