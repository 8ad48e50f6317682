// The Stats answer for one caller. The tiers' counters are the whole
// daemon's, and would tell a tenant what the others do: the operator gets
// them with every namespace's own figures; anyone else its own namespace's
// figures alone, in the same fields (StatsResponse.namespace_only).
#pragma once

#include "cache/blob_stats.h"
#include "kjit/v1/cache.pb.h"
#include "server/compile/daemon_cache.h"
#include "server/rpc/call_gate.h"
#include "server/workers/compile_workers.h"

namespace kjit {

// `workers` (null without compile workers): their precompiled headers, for
// the operator.
v1::StatsResponse stats_for(const DaemonCache& cache, const BlobStats& blobs, const Caller& caller,
                            const WorkerCounters* workers = nullptr);

}  // namespace kjit
