// The kjit.v1.Diagnostics gRPC service: Echo, the round-trip floor;
// GetStatus, how compiles are confined and bounded; and Reload, the
// operator's reload of the configuration. It uses the callback
// API, as Compile does, so the floor is measured on the same server
// machinery as the memory hits compared with it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "server/rpc/call_gate.h"
#include "server/config/config_reload.h"
#include "server/config/daemon_config.h"
#include "server/compile/fleet_builds.h"
#include "kjit/v1/diagnostics.grpc.pb.h"

namespace kjit {

class CompileWorkers;

class DiagnosticsService final : public v1::Diagnostics::CallbackService {
 public:
  // What the daemon decided at start.
  struct Facts {
    DaemonConfig config;
    std::string confinement;  // check_worker_confinement's description
    std::vector<std::string> cache_tiers{};  // the tiers open, top first; empty: the cache is off
    std::string cache_sharing{};           // what daemons share beyond entries (CacheStatus.sharing)
  };
  // What a reload does (the daemon's): what it put in force, or why the
  // configuration read again was refused (the old one stays in force).
  using Reloader = std::function<Result<ReloadReport>()>;
  // workers may be null: compiles run in the daemon.
  // gate null: calls pass a gate without tenants or metrics.
  // reload empty: Reload answers FAILED_PRECONDITION (nothing to reload).
  DiagnosticsService(Facts facts, std::shared_ptr<const CompileWorkers> workers, std::shared_ptr<CallGate> gate = nullptr,
                     Reloader reload = {});

  // The configuration in force after a reload, as GetStatus shows it.
  void set_config(DaemonConfig config);
  // The fleet builds' counters, as GetStatus shows them; set before serving.
  void set_fleet(std::function<FleetStats()> fleet) { fleet_ = std::move(fleet); }

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context, const v1::EchoRequest* request,
                                 v1::EchoResponse* response) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::GetStatusRequest* request,
                                      v1::GetStatusResponse* response) override;
  grpc::ServerUnaryReactor* Reload(grpc::CallbackServerContext* context, const v1::ReloadRequest* request,
                                   v1::ReloadResponse* response) override;

 private:
  // How compiles are confined and bounded, and the workers now.
  void describe_status(const DaemonConfig& config, v1::GetStatusResponse* response) const;
  // Every key of the configuration table, as the daemon serves with it.
  static void describe_settings(const DaemonConfig& config, v1::GetStatusResponse* response);

  Facts facts_;
  std::atomic<std::shared_ptr<const DaemonConfig>> config_;  // facts_.config, then each reload's
  Reloader reload_;
  std::shared_ptr<const CompileWorkers> workers_;
  std::shared_ptr<CallGate> gate_;
  std::function<FleetStats()> fleet_;  // empty: no fleet builds
};

}  // namespace kjit
