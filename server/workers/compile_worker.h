// A compile worker process's side (kjitd --worker-fd N): build the pipeline,
// confine itself, then read a job, plan and run it within the compile
// bounds, and answer with the artifact or the error, until the daemon closes
// the socket. A compiler that crashes or hangs takes this process down,
// never the daemon.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"
#include "server/workers/worker_class.h"
#include "server/workers/worker_launch.h"

namespace kjit {

// The first message from the daemon: its configuration file's text (empty
// when it runs without one), the file's path, the worker's private
// directory and its class (what it may run, its CPU priority).
struct WorkerSetup {
  std::string config_text, config_path, private_dir;
  std::optional<std::vector<ToolkitHome>> toolkits;  // the daemon's discovery; nullopt: discover
  WorkerClass worker_class;
  // A Triton worker's builds: interpreter and description, as the daemon found them.
  std::vector<std::pair<std::string, std::string>> triton_builds;
  // The builds a prestarted Triton worker warms before it says Ready.
  std::vector<std::string> triton_warm_builds;
};
Result<WorkerSetup> read_worker_setup(int fd);

// The whole life of a worker process, from its configuration to the daemon
// closing the socket. Returns the process's exit code: 0 when the daemon
// closed the socket or a bound ended the worker after its answer.
int run_worker_process(const DaemonConfig& config, const WorkerSetup& setup, int fd);

// A worker process's main: its logging, run_worker_process, and an exit that
// runs no exit-time checks (a confined process cannot: LeakSanitizer needs
// ptrace).
[[noreturn]] void worker_main(const DaemonConfig& config, const WorkerSetup& setup, int fd);

}  // namespace kjit
