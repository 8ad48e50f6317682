// kjitd's gRPC server: the unix socket (accepted by kjitd itself, which
// reads each connection's credentials; socket_acceptor.h) and an optional
// TCP address, the Compiler, Health and reflection services, and an orderly
// shutdown.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "server/config/daemon_config.h"
#include "server/workers/worker_launch.h"
#include "kjit/status.h"

namespace grpc {
class Server;
}

namespace kjit {

class CompilerService;
class LaunchService;
class CacheService;
class DiagnosticsService;
class ElasticThreadPool;
class CompileWorkers;
class CompileAdmission;
class CallGate;
class Metrics;
class DaemonCache;
class SocketAcceptor;
class PeerRegistry;

class Daemon {
 public:
  // `workers` empty: compiles run in this process.
  explicit Daemon(DaemonConfig config, WorkerLaunch workers = {});
  ~Daemon();

  // Binds the socket and starts serving; an address in use by a live daemon,
  // or one that cannot be bound, is an error.
  Status start();
  void wait();      // until shutdown()
  void shutdown();  // idempotent; safe from another thread
  // SIGTERM's orderly stop: health says NOT_SERVING and new calls are
  // refused at once, calls in flight get up to drain_timeout_s to finish,
  // then shutdown(). Safe from another thread.
  void drain();

  // The Prometheus port when metrics are served (metrics_port), else 0.
  uint16_t metrics_port() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  DaemonConfig config_;
  WorkerLaunch worker_launch_;
  std::string socket_path_;
  std::string confinement_;  // how compiles are confined, for the status RPC
  // Declared before the services and the server, so destroyed after them:
  // the server's shutdown waits for the calls whose work runs here.
  std::shared_ptr<ElasticThreadPool> blocking_work_;
  std::shared_ptr<CompileWorkers> workers_;  // null: compiles run in this process
  std::shared_ptr<CompileAdmission> admission_;
  std::shared_ptr<Metrics> metrics_;  // null: no metrics_port
  std::shared_ptr<CallGate> gate_;
  std::unique_ptr<CompilerService> compiler_service_;
  std::unique_ptr<LaunchService> launch_service_;
  std::unique_ptr<CacheService> cache_service_;
  std::unique_ptr<DiagnosticsService> diagnostics_service_;
  std::unique_ptr<grpc::Server> server_;
  // The unix socket's connections, accepted here for their credentials and
  // handed to server_; stopped before server_ shuts down.
  std::unique_ptr<SocketAcceptor> acceptor_;
  std::once_flag shutdown_once_;

  void stop_serving(std::chrono::milliseconds grace);
  void publish_direct_reads(const DaemonCache* cache);
};

}  // namespace kjit
