// A real kjitd on a socket in a fresh temporary directory, started for the
// benchmark and stopped (and the directory removed) when it goes away.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "kjit/status.h"

namespace kjit::bench {

class KjitdProcess {
 public:
  // Starts `kjitd_path --socket <tmp>/kjitd.sock --log-level warn --no-cache`
  // plus extra_args, and waits until it answers health checks with SERVING.
  static Result<std::unique_ptr<KjitdProcess>> start(const std::string& kjitd_path,
                                                     const std::vector<std::string>& extra_args = {});
  ~KjitdProcess();
  KjitdProcess(const KjitdProcess&) = delete;
  KjitdProcess& operator=(const KjitdProcess&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  double startup_ms() const { return startup_ms_; }  // spawn to first SERVING
  int stop();                                        // SIGTERM; the exit code

 private:
  KjitdProcess(std::string dir, ChildProcess child)
      : dir_(std::move(dir)), socket_path_(dir_ + "/kjitd.sock"), child_(std::move(child)) {}
  std::string dir_;
  std::string socket_path_;
  ChildProcess child_;
  double startup_ms_ = 0;
};

}  // namespace kjit::bench
