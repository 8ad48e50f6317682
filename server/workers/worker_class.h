// Which compile workers a compile may run in. Workers differ in two ways
// that a process cannot change once it runs, so each is a class of workers
// of its own rather than a setting of a shared one:
// - Tile IR workers may run tileiras and its ptxas: their seccomp filter
//   lets execve through and Landlock makes exactly those programs (and their
//   loader) executable. Every other worker has execve refused outright, so a
//   toolchain that parses a request's source (NVRTC, LLVM) never runs in a
//   process that may start programs.
// - Triton workers run a Triton build's Python interpreter as a child (warm:
//   Triton imported once) and may run it and the build's ptxas: as Tile IR
//   workers, they let execve through for exactly those programs.
// - Background workers (fleet builds) run at the lowest CPU priority, which
//   an unprivileged process can lower but never raise again.
#pragma once

#include <cstddef>
#include <string>

#include "core/compile_job.h"

namespace kjit {

struct WorkerClass {
  bool tileir = false;
  bool background = false;
  bool triton = false;
  bool operator==(const WorkerClass&) const = default;

  // "general", "tileir", "triton", each with " background" for fleet builds.
  std::string name() const;
  // 0..k_worker_class_count-1, for counting the workers of each class.
  size_t index() const { return (triton ? 4 : tileir ? 2 : 0) + (background ? 1 : 0); }
  static WorkerClass of_index(size_t index) {
    return WorkerClass{index == 2 || index == 3, index % 2 == 1, index >= 4};
  }
  // Whether its workers may start programs (tileiras, a Triton build).
  bool runs_programs() const { return tileir || triton; }
};
inline constexpr size_t k_worker_class_count = 6;

// The class a job runs in: Tile IR in a Tile IR worker, Triton IR in a
// Triton worker, everything else in a general one; `background` for work no
// client waits for.
WorkerClass worker_class_for(const CompileJob& job, bool background);

}  // namespace kjit
