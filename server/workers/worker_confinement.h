// What a compile worker may touch once confined, derived from the daemon's
// configuration, the pipeline it built and the worker's class: the
// toolchains, the system libraries, its plugins, its own private directory
// and, for a Tile IR worker only, tileiras. The daemon checks at start that
// the kernel can confine workers at all.
#pragma once

#include <string>

#include "backends/tileiras/tileiras.h"
#include "backends/triton/triton_build.h"
#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"
#include "server/workers/worker_class.h"
#include "server/workers/worker_sandbox.h"

namespace kjit {

// A Tile IR worker's policy adds tileiras (allow_tileiras) where it is
// installed; every other worker's names no executable, so its seccomp
// filter refuses execve.
SandboxPolicy worker_sandbox_policy(const DaemonConfig& config, const CompilePipeline& pipeline,
                                    const std::string& private_dir, const WorkerClass& worker_class);

// What running tileiras adds to a worker's policy: its wheel (bin/, lib/
// with libnvvm, nvvm/) readable, and tileiras and the ptxas it starts the
// only programs that may run. They inherit the worker's confinement and
// bounds, and its process group, which the pool kills at the time bound.
void allow_tileiras(SandboxPolicy& policy, const TileirasLocation& tileiras);

// What a Triton build adds to a Triton worker's policy: its environment and
// base interpreter readable (read_paths, as it described them), and its
// interpreter and the programs its compiles run (its ptxas) executable.
void allow_triton_build(SandboxPolicy& policy, const TritonBuild& build);

// Confines the calling worker process to worker_sandbox_policy; what was
// applied, in one line.
Result<std::string> confine_worker(const DaemonConfig& config, const CompilePipeline& pipeline,
                                   const std::string& private_dir, const WorkerClass& worker_class);

// The daemon's start-up check: with sandbox = "landlock" the kernel must
// offer Landlock and seccomp (failed_precondition naming what is missing and
// the way out); with "off", a warning. Returns how workers will be confined,
// class by class.
Result<std::string> check_worker_confinement(const DaemonConfig& config);

}  // namespace kjit
