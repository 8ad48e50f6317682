// A daemon process's life after its command line: start serving, wait for
// SIGINT or SIGTERM, shut down in order, and exit within a bound.
#pragma once

#include "server/config/daemon_config.h"
#include "server/workers/worker_launch.h"

namespace kjit {

// The process's exit code: 1 when the daemon cannot start (said in the log).
int serve_until_signalled(const DaemonConfig& config, const WorkerLaunch& workers);

}  // namespace kjit
