// The framing and messages between kjitd and a compile worker process
// (compile_worker.proto): each message is a 4-byte little-endian length and
// the serialized proto, over a unix socketpair.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/artifact.h"
#include "core/compile_job.h"
#include "server/config/daemon_config.h"
#include "pipeline/compile_plan.h"
#include "kjit/status.h"
#include "server/workers/compile_worker.pb.h"

namespace kjit {

// Larger than any job (inputs and headers are bounded far below it) or
// artifact; a length beyond it means the peer is not speaking the protocol.
inline constexpr uint32_t k_max_worker_frame_bytes = 1u << 30;

// The folder of a worker's private directory that holds its precompiled
// headers, kept across its jobs; the daemon reads their size there.
inline constexpr const char* k_worker_pch_directory = "pch";

// A job and the plan the daemon derived for it, as a worker receives them,
// and whose it is: the caller's compile namespace, which only keeps its
// PCHs apart from other callers' (CompilePipeline::run).
struct WorkerJob {
  CompileJob job;
  CompilePlan plan;
  std::string caller_namespace;
};
worker::Job to_worker_job(const CompileJob& job, const CompilePlan& plan, std::string_view caller_namespace = {});
// The request is read with the daemon's own translation (to_compile_job)
// and limits; anything that does not read back is an internal error, since
// only the daemon writes jobs.
Result<WorkerJob> from_worker_job(const worker::Job& job, const DaemonConfig& config);

// A worker's answer for a compiled artifact, and the daemon's reading of it.
worker::Outcome artifact_outcome(Artifact&& artifact);
Result<Artifact> from_artifact_outcome(worker::Outcome&& outcome);

// Writes one frame; an error when the peer is gone.
Status write_frame(int fd, const google::protobuf::MessageLite& message);

enum class FrameRead { ok, closed, timed_out, error };
// Reads one frame into `bytes`, waiting until `deadline` (nullopt: forever).
// `closed` when the peer closed the socket (or died) before a whole frame.
FrameRead read_frame(int fd, std::string& bytes, std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace kjit
