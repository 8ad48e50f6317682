// A real REAPI server for tests: BuildGrid (PyPI, installed by
// scripts/install-deps.sh in .deps/buildgrid, or the environment named by
// $KJIT_BUILDGRID) started on a free loopback port with its CAS on disk and
// an in-memory ActionCache (or a durable one in a Redis), killed and
// restarted on demand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace kjit::test {

class BuildGridServer {
 public:
  // The virtual environment's python, or empty when BuildGrid is not installed.
  static std::string python();
  // Why the REAPI tests cannot run here, or nullopt when they can. Under CI
  // ($CI set) a missing BuildGrid is a failure, not a skip.
  static std::optional<std::string> unavailable();

  BuildGridServer();  // picks the port and a directory; does not start
  // From the next start on, the ActionCache lives in the Redis at
  // 127.0.0.1:redis_port (BuildGrid's !redis-action-cache), so it outlives
  // the server as its CAS on disk does.
  void keep_action_cache_in_redis(int redis_port) { redis_port_ = redis_port; }
  // From the next start on, one more instance besides the default "", with
  // an ActionCache of its own (in memory) over the same CAS.
  void add_instance(std::string name) { instances_.push_back(std::move(name)); }
  ~BuildGridServer();
  BuildGridServer(const BuildGridServer&) = delete;
  BuildGridServer& operator=(const BuildGridServer&) = delete;

  // Starts (or restarts) the server on the same port and CAS directory and
  // waits, bounded, until it answers GetCapabilities; false otherwise (its
  // log is at log_path()).
  bool start();
  // SIGKILL: the server as a crash leaves it (the in-memory ActionCache is lost).
  void kill();

  std::string endpoint() const { return "grpc://127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  // The root of BuildGrid's disk storage (blobs under cas/objects/, one file
  // per digest in a directory named by its first two digits).
  std::string cas_directory() const { return dir_ + "/cas"; }
  std::string log_path() const { return dir_ + "/bgd.log"; }
  // The file of a blob in the CAS, found by its hash; empty when absent.
  std::string blob_file(const std::string& hash) const;

 private:
  std::string dir_;
  uint16_t port_ = 0;
  int redis_port_ = 0;  // 0: the ActionCache in memory
  std::vector<std::string> instances_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace kjit::test
