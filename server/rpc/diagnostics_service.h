// The kjit.v1.Diagnostics gRPC service: Echo, the round-trip floor, and
// GetStatus, how compiles are confined and bounded. It uses the callback
// API, as Compile does, so the floor is measured on the same server
// machinery as the memory hits compared with it.
#pragma once

#include <memory>
#include <string>

#include "server/rpc/call_gate.h"
#include "server/config/daemon_config.h"
#include "kjit/v1/diagnostics.grpc.pb.h"

namespace kjit {

class CompileWorkers;

class DiagnosticsService final : public v1::Diagnostics::CallbackService {
 public:
  // What the daemon decided at start.
  struct Facts {
    DaemonConfig config;
    std::string confinement;  // check_worker_confinement's description
  };
  // workers may be null: compiles run in the daemon.
  // gate null: calls pass a gate without tenants or metrics.
  DiagnosticsService(Facts facts, std::shared_ptr<const CompileWorkers> workers, std::shared_ptr<CallGate> gate = nullptr);

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context, const v1::EchoRequest* request,
                                 v1::EchoResponse* response) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::GetStatusRequest* request,
                                      v1::GetStatusResponse* response) override;

 private:
  // How compiles are confined and bounded, and the workers now.
  void describe_status(v1::GetStatusResponse* response) const;
  // Every key of the configuration table, as the daemon serves with it.
  void describe_settings(v1::GetStatusResponse* response) const;

  Facts facts_;
  std::shared_ptr<const CompileWorkers> workers_;
  std::shared_ptr<CallGate> gate_;
};

}  // namespace kjit
