// A compile worker process's side (kjitd --worker-fd N): read a job, plan and
// run it, answer with the artifact or the error, until the daemon closes the
// socket. A compiler that crashes or hangs takes this process down, never
// the daemon (DESIGN.md rule 5).
#pragma once

#include <string>

#include "pipeline/compile_pipeline.h"

namespace kjit {

// The first message from the daemon: its configuration file's text (empty
// when it runs without one) and the file's path.
struct WorkerSetup {
  std::string config_text, config_path;
};
Result<WorkerSetup> read_worker_setup(int fd);

// Returns the process's exit code: 0 when the daemon closed the socket.
int run_compile_worker(const CompilePipeline& pipeline, int fd);

}  // namespace kjit
