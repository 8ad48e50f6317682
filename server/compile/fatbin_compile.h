// A request for several targets: each target is its own CompileJob (a cubin,
// cached under its own key, so a later single-target request is a hit), plus
// one job for PTX of the newest architecture, so GPUs newer than every
// listed target can JIT it. The parts are combined with nvFatbin into the
// fatbin the driver loads with cuModuleLoadData.
#pragma once

#include <vector>

#include "core/compile_job.h"
#include "pipeline/toolkit_routing.h"
#include "server/compile/cached_compiler.h"
#include "server/config/daemon_config.h"
#include "kjit/v1/compiler.pb.h"

namespace kjit {

// Most targets one request may name.
inline constexpr int k_max_request_targets = 32;

// `targets` set, or artifact FATBIN: the answer is a fatbin.
bool wants_fatbin(const v1::CompileRequest& request);

// The target of a fatbin's PTX part: the newest of `targets` (not empty),
// without an arch-specific suffix, since PTX for sm_100a runs on sm_100
// alone and this part is for GPUs newer than every cubin.
Target fatbin_ptx_target(const std::vector<Target>& targets);

// The cubin jobs in the request's order, then the PTX job last.
Result<std::vector<CompileJob>> to_fatbin_jobs(const v1::CompileRequest& request, const DaemonConfig& config);

// The parts' targets as the request named them, canonical and checked
// (known architectures, no repeats, at most k_max_request_targets).
Result<std::vector<Target>> fatbin_targets(const v1::CompileRequest& request);

// Every part's outcome, in the jobs' order, into the response: a failed
// part is the request's error, naming its target (the others stay cached).
Status to_fatbin_response(const std::vector<CompileJob>& jobs, const std::vector<Result<CompileOutcome>>& outcomes,
                          const ToolkitRouting& toolkits, v1::CompileResponse& response);

}  // namespace kjit
