// Starts a real kjitd on a temporary socket for a test and stops it after.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace kjit::test {

class DaemonProcess {
 public:
  // Starts build/bin/kjitd with --socket <temp> plus extra_args and waits until
  // it answers health checks (or fails the calling test).
  explicit DaemonProcess(std::vector<std::string> extra_args = {});
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  bool running() const;  // false once the process has exited
  int stop();            // SIGTERM, wait; returns the exit status
  pid_t pid() const { return pid_; }

 private:
  std::string dir_;
  std::string socket_path_;
  pid_t pid_ = -1;
};

// Runs a command, capturing stdout and stderr; returns the exit code.
struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

std::string kjitd_path();
std::string kjit_cli_path();
std::string source_dir();

}  // namespace kjit::test
