// A daemon process's life after its command line: start serving, reload
// on SIGHUP, wait for SIGINT or SIGTERM, shut down in order, and exit
// within a bound.
#pragma once

#include <functional>

#include "kjit/status.h"
#include "server/config/daemon_config.h"
#include "server/workers/worker_launch.h"

namespace kjit {

// The process's exit code: 1 when the daemon cannot start (said in the log).
// `reread` reads the configuration again for a reload (SIGHUP, `kjit admin
// reload`); empty: a reload re-reads only the files the start's names.
int serve_until_signalled(const DaemonConfig& config, const WorkerLaunch& workers,
                          std::function<Result<DaemonConfig>()> reread = {});

}  // namespace kjit
