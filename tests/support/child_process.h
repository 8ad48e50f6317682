// Child processes for the tests and benchmarks: kjitd in the background, the
// kjit CLI or kjitd run to completion. posix_spawn, not fork: the callers hold
// gRPC threads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit::test {

struct SpawnOptions {
  // Where stdout and stderr go: empty inherits this process's, any path is
  // opened for writing (created or truncated), "/dev/null" included.
  std::string stdout_path{}, stderr_path{};
  std::vector<std::string> env{};  // NAME=value, replacing or added to this process's environment
};

class ChildProcess {
 public:
  // stdin is /dev/null.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // terminates a child still running

  pid_t pid() const { return pid_; }  // -1 once reaped: the number may be reused from then on
  bool running();
  void signal(int number);  // to the child, while it is not reaped
  int wait();               // the exit code, or 128 + signal
  int terminate();          // SIGTERM, then wait

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// Runs argv to completion with its output discarded; returns the exit code.
Result<int> run_to_exit(const std::vector<std::string>& argv);

// Runs argv to completion, capturing stdout and stderr; exit_code is -1 when
// it could not start.
struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

// A fresh directory "<system temp>/<prefix>XXXXXX" (mkdtemp).
Result<std::string> make_temp_dir(const std::string& prefix);

std::string read_file(const std::string& path);

}  // namespace kjit::test
