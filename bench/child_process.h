// Child processes for the benchmark: kjitd in the background, the kjit CLI
// run to completion. posix_spawn, not fork: the bench holds gRPC threads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit::bench {

enum class ChildOutput { inherit, discard };

class ChildProcess {
 public:
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv, ChildOutput output);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // terminates a child still running

  bool running();
  int wait();       // the exit code, or 128 + signal
  int terminate();  // SIGTERM, then wait

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// Runs argv to completion with its output discarded; returns the exit code.
Result<int> run_to_exit(const std::vector<std::string>& argv);

}  // namespace kjit::bench
