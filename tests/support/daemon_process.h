// A real kjitd on a socket in a fresh temporary directory, for a test or a
// benchmark: started and awaited until it serves, stopped (and the directory
// removed) when it goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kjit/status.h"
#include "support/child_process.h"

namespace kjit::test {

// The binaries and directories of this build.
std::string kjitd_path();
std::string kjit_cli_path();
std::string source_dir();
std::string cuda_home();  // the toolkit kjit was built against

struct DaemonOptions {
  // After kjitd's --socket and --log-level warn (unless they name a level).
  // Without a --cache-dir here the daemon gets its own, so that it never
  // reads or fills the user's ~/.cache/kjit.
  std::vector<std::string> args{};
  std::string config{};                // TOML; when set, written to config_path() and passed as --config
  std::string socket_path{};           // default: kjitd.sock in the daemon's directory
  std::vector<std::string> env{};      // NAME=value for kjitd's environment
  bool capture_log = false;            // kjitd's stderr to log() rather than this process's
  std::chrono::milliseconds poll{50};  // between health checks while it starts
  std::chrono::seconds deadline{30};   // to serve after the spawn
  std::string kjitd{};                 // the binary; default kjitd_path(), this build's
  // Off (--no-triton-prestart) unless a test asks: finding the Triton builds
  // and starting a Triton worker costs seconds of CPU, which the suite's
  // hundreds of daemons would pay for no Triton request.
  bool triton_prestart = false;
  // False: the daemon finds no Triton build. kjitd looks for them beside
  // the CUDA wheels (.deps/triton-builds next to .deps/cuda-wheels); here it
  // reaches the wheels through a link in its own directory, beside which
  // there is none. For suites that list toolkits, which waits until the
  // Triton builds are found: seconds of CPU per daemon, for no Triton
  // request. Not with a config that sets local_toolkit_prefix itself.
  bool triton_builds = true;
};

class DaemonProcess {
 public:
  // Starts kjitd and waits until it answers health checks with SERVING, it
  // exits, or the deadline passes; status() says which.
  explicit DaemonProcess(DaemonOptions options = {});
  // The same, as an error when it does not serve.
  static Result<std::unique_ptr<DaemonProcess>> start(DaemonOptions options);
  virtual ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const Status& status() const { return status_; }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& dir() const { return dir_; }  // the daemon's own temporary directory
  std::string config_path() const { return dir_ + "/kjitd.toml"; }
  std::string log() const;                           // what kjitd wrote to stderr, with capture_log
  double startup_ms() const { return startup_ms_; }  // spawn to first SERVING
  pid_t pid() const { return child_ ? child_->pid() : -1; }

  bool running() { return child_ && child_->running(); }
  void signal(int number);
  bool stopped() const { return !child_; }  // stop() has run, or kjitd never started
  int stop();                               // SIGTERM, then wait: the exit code (-1 once stopped)

 private:
  Status status_ = Ok{};
  std::string dir_;
  std::string socket_path_;
  std::optional<ChildProcess> child_;
  double startup_ms_ = 0;
};

// Runs kjitd to its exit, as for a start-up it must refuse: `timeout 20 kjitd
// --socket <temp> [--config <temp>] args...`, its output captured.
CommandResult run_kjitd(const std::vector<std::string>& args, const std::string& config = "");

}  // namespace kjit::test
