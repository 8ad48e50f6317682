// kjitd's command line: its flags over the configuration file (or, in a
// compile worker, over the configuration text the daemon sends), the
// command a worker is started with, and KJIT_PLUGIN_PATHS.
#pragma once

#include <optional>

#include "server/compile_worker.h"
#include "server/daemon_config.h"
#include "server/worker_launch.h"

namespace kjit {

struct DaemonCommandLine {
  DaemonConfig config;
  WorkerLaunch worker_launch;  // how the daemon starts its workers
  int worker_fd = -1;        // >= 0: this process is a compile worker
  WorkerSetup worker_setup;  // a worker's, read from worker_fd
};

// The process should stop with `exit_code` when this returns nullopt
// (--help: 0; a usage error or a bad configuration: non-zero, said on
// stderr).
std::optional<DaemonCommandLine> read_command_line(int argc, char** argv, int& exit_code);

}  // namespace kjit
