// kjitd's command line: its flags over the configuration file (or, in a
// compile worker, over the configuration text the daemon sends), the
// command a worker is started with, and KJIT_PLUGIN_PATHS.
#pragma once

#include <functional>
#include <optional>

#include "server/workers/compile_worker.h"
#include "server/config/daemon_config.h"
#include "server/workers/worker_launch.h"

namespace kjit {

struct DaemonCommandLine {
  DaemonConfig config;
  WorkerLaunch worker_launch;  // how the daemon starts its workers
  int worker_fd = -1;        // >= 0: this process is a compile worker
  WorkerSetup worker_setup;  // a worker's, read from worker_fd
  // --check-config: check what a start would build from `config`, say
  // whether it is valid, and exit without serving.
  bool check_config = false;
  // The configuration as a start would read it now: the file as it is
  // now, under the same flags and environment. What a reload (SIGHUP,
  // `kjit admin reload`) reads; the file's errors are INVALID_ARGUMENT
  // naming it. Empty in a worker, which never reloads.
  std::function<Result<DaemonConfig>()> reread;
};

// The process should stop with `exit_code` when this returns nullopt
// (--help and the --print-*-reference flags: 0; a usage error or a bad
// configuration: non-zero, said on stderr). A configuration is bad when the file cannot be read or parsed,
// or when, with the flags over it, its log level or default target is
// not one kjitd knows or its TLS settings do not go together.
std::optional<DaemonCommandLine> read_command_line(int argc, char** argv, int& exit_code);

// What --check-config does after read_command_line: builds the compile
// pipeline the daemon would (toolkits, plugins, named pipelines and edits)
// and checks that its compile workers can be confined as configured, the
// checks a start makes before it listens (the TCP listener's TLS files
// included), without listening, creating the
// socket or opening the cache. Prints "configuration OK" on stdout and
// returns 0, or prints the error on stderr and returns 2.
int check_configuration(const DaemonConfig& config);

}  // namespace kjit
