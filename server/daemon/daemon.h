// kjitd's gRPC server: the unix socket (accepted by kjitd itself, which
// reads each connection's credentials; socket_acceptor.h) and an optional
// TCP address, the Compiler, Health and reflection services, and an orderly
// shutdown.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "server/config/config_reload.h"
#include "server/config/daemon_config.h"
#include "server/daemon/socket_identity.h"
#include "server/workers/worker_launch.h"
#include "kjit/status.h"

namespace grpc {
class Server;
}

namespace kjit {

class CachedCompiler;
class CompilerService;
class LaunchService;
class CacheService;
class RecipeService;
class DiagnosticsService;
class ElasticThreadPool;
class CompileWorkers;
class CompileAdmission;
class CallGate;
class Metrics;
class DaemonCache;
class SocketAcceptor;
class PeerRegistry;
class ServedCertificates;

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

  // Where a reload reads the configuration from (the file and the flags,
  // daemon_command_line.h); before start(). Unset: a reload re-reads the
  // tenants, TLS and log files under the configuration of the start.
  void set_reread(std::function<Result<DaemonConfig>()> reread) { reread_ = std::move(reread); }
  // SIGHUP and `kjit admin reload`: reads the configuration again and puts
  // in force the tenants file, the TCP listener's TLS files, the log file
  // (reopened) and every reloadable key (config_keys.h), all or nothing: a
  // file that does not parse or a certificate that does not match its key
  // refuses the whole reload (the error names it) and the configuration in
  // force stays. Counted in metrics either way. Safe from any thread; one
  // reload at a time.
  Result<ReloadReport> reload();

  // The Prometheus port when metrics are served (metrics_port), else 0.
  uint16_t metrics_port() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  DaemonConfig config_;  // in force: the start's, with each reload's reloadable keys (under config_mutex_)
  mutable std::mutex config_mutex_;
  std::mutex reload_mutex_;  // one reload at a time
  std::function<Result<DaemonConfig>()> reread_;
  // Where kjitd started: a reload reads the configuration's relative paths
  // from there, as the start did, not from the empty directory it serves in.
  std::string start_directory_;
  WorkerLaunch worker_launch_;
  std::string socket_path_;
  std::optional<SocketIdentity> bound_socket_;  // the socket this daemon put at socket_path_, once it did
  std::string confinement_;  // how compiles are confined, for the status RPC
  // Declared before the services and the server, so destroyed after them:
  // the server's shutdown waits for the calls whose work runs here.
  std::shared_ptr<ElasticThreadPool> blocking_work_;
  std::shared_ptr<CompileWorkers> workers_;  // null: compiles run in this process
  std::shared_ptr<CompileAdmission> admission_;
  std::shared_ptr<Metrics> metrics_;  // null: no metrics_port
  std::shared_ptr<CallGate> gate_;
  std::shared_ptr<DaemonCache> cache_;  // null: the cache is off; its shares follow the tenants
  std::shared_ptr<ServedCertificates> served_certificates_;  // null: no TLS listener
  std::shared_ptr<const CachedCompiler> compiler_;  // its warm-up seal follows after_warmup's reloads
  std::unique_ptr<CompilerService> compiler_service_;
  std::unique_ptr<LaunchService> launch_service_;
  std::unique_ptr<CacheService> cache_service_;
  std::unique_ptr<RecipeService> recipe_service_;
  std::unique_ptr<DiagnosticsService> diagnostics_service_;
  std::unique_ptr<grpc::Server> server_;
  // The unix socket's connections, accepted here for their credentials and
  // handed to server_; stopped before server_ shuts down.
  std::unique_ptr<SocketAcceptor> acceptor_;
  std::once_flag shutdown_once_;

  void stop_serving(std::chrono::milliseconds grace);
  Result<ReloadReport> reload_from(const DaemonConfig& read);
  void publish_direct_reads(const DaemonCache* cache);
};

}  // namespace kjit
