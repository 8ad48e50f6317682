// The edge of the Compile RPC: a CompileRequest proto is validated against
// the daemon's limits and becomes a CompileJob; an Artifact becomes a
// CompileResponse. Nothing past here sees a proto but the worker protocol.
#pragma once

#include "core/artifact.h"
#include "core/compile_job.h"
#include "server/config/daemon_config.h"
#include "kjit/v1/compiler.pb.h"

namespace kjit {

Result<CompileJob> to_compile_job(const v1::CompileRequest& request, const DaemonConfig& config);

// A validated job as the request that would have produced it: what the
// daemon sends a compile worker, which reads it back with to_compile_job,
// so a compile job has one wire form and one translation.
void to_compile_request(const CompileJob& job, v1::CompileRequest& request);

// `timings`: what ran for this request (a hit's lookup, or the compile's
// stages), which the artifact shared with the cache does not carry.
void to_compile_response(const Artifact& artifact, const std::vector<StageTiming>& timings,
                         v1::CompileResponse& response);

}  // namespace kjit
