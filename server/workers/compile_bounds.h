// The resource bounds of one compile (memory, CPU time, open files, output
// size): applied by a worker process to itself, and read back by the daemon
// from how a worker ended, so the request is told which bound it crossed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/artifact.h"
#include "server/config/daemon_config.h"

namespace kjit {

// A worker that runs out of memory under its bound leaves with this status
// (from the new-handler and LLVM's bad-alloc handler), so the daemon can
// tell it from a crash.
inline constexpr int k_exit_out_of_memory = 86;

// Worker side, once its toolchains are loaded: the address space it holds
// now plus bounds.memory_bytes, the open-file and file-size limits, and the
// out-of-memory handlers. Returns what was applied, for the log.
// `memory_hard_limit_open`: the address-space limit is a soft one only, so
// that a child may lift it (a Triton worker's interpreter, whose jobs'
// children each take their own bound).
Result<std::string> apply_worker_bounds(const CompileBounds& bounds, bool memory_hard_limit_open = false);

// Worker side, before each compile: CPU time from now on is bounded by
// bounds.cpu_seconds (the worker has already used some for earlier jobs).
void start_compile_cpu_bound(const CompileBounds& bounds);

// Worker side, after a compile: the bound it crossed without being killed
// (an artifact larger than output_bytes, a failure while every file
// descriptor was taken), as the error to answer; nullopt when none.
std::optional<Error> bound_crossed_by(const Result<Artifact>& outcome, const CompileBounds& bounds);

// Daemon side: the bound a compile crossed, judged from how its worker
// ended (SIGXCPU, SIGXFSZ, the out-of-memory exit; nullopt while it lives)
// and from what it wrote during the job (a toolchain's own report of a
// failed allocation, "ptxas fatal: Memory allocation failure", "LLVM ERROR:
// out of memory"); nullopt when no bound explains the failure.
std::optional<std::string> bound_crossed(std::optional<int> wait_status, std::string_view job_output,
                                         const CompileBounds& bounds);

}  // namespace kjit
