#include "server/rpc/diagnostics_service.h"

#include "server/config/config_keys.h"
#include "server/workers/compile_workers.h"

namespace kjit {

DiagnosticsService::DiagnosticsService(Facts facts, std::shared_ptr<const CompileWorkers> workers,
                                       std::shared_ptr<CallGate> gate)
    : facts_(std::move(facts)),
      workers_(std::move(workers)),
      gate_(gate ? std::move(gate) : std::make_shared<CallGate>(CallGate::Options{})) {}

grpc::ServerUnaryReactor* DiagnosticsService::Echo(grpc::CallbackServerContext* context,
                                                   const v1::EchoRequest* request, v1::EchoResponse* response) {
  return gate_->serve_now(context, "Echo", [&](const Caller&) {
    response->set_payload(request->payload());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* DiagnosticsService::GetStatus(grpc::CallbackServerContext* context,
                                                        const v1::GetStatusRequest*,
                                                        v1::GetStatusResponse* response) {
  return gate_->serve_now(context, "GetStatus", [&](const Caller& caller) {
    describe_status(response);
    if (caller.is_operator()) describe_settings(response);
    return grpc::Status::OK;
  });
}

void DiagnosticsService::describe_settings(v1::GetStatusResponse* response) const {
  for (const ConfigKey& key : config_keys()) {
    v1::ConfigSetting* setting = response->add_settings();
    setting->set_key(std::string(key.path));
    setting->set_value(config_value_text(key, facts_.config));
    setting->set_flag(std::string(key.flag));
  }
}

void DiagnosticsService::describe_status(v1::GetStatusResponse* response) const {
  const DaemonConfig& config = facts_.config;
  response->set_version(KJIT_VERSION);
  v1::ConfinementStatus& confinement = *response->mutable_confinement();
  confinement.set_mode(workers_ ? config.sandbox : "in-process");
  confinement.set_description(facts_.confinement);
  v1::CompileBoundsStatus& bounds = *response->mutable_bounds();
  bounds.set_memory_bytes(config.compile_bounds.memory_bytes);
  bounds.set_cpu_seconds(config.compile_bounds.cpu_seconds);
  bounds.set_open_files(config.compile_bounds.open_files);
  bounds.set_output_bytes(config.compile_bounds.output_bytes);
  bounds.set_timeout_seconds(config.compile_timeout_s);
  v1::CompileWorkersStatus& workers = *response->mutable_workers();
  if (workers_) {
    const CompileWorkers::StartReport start = workers_->last_start();
    confinement.set_worker_confinement(start.confinement);
    workers.set_max_workers(config.compile_workers);
    workers.set_live_workers(static_cast<uint32_t>(workers_->live_workers()));
    workers.set_ready_workers(static_cast<uint32_t>(workers_->ready_workers()));
    workers.set_busy_workers(static_cast<uint32_t>(workers_->busy_workers()));
    workers.set_started(start.started);
    workers.set_last_start_ms(static_cast<double>(start.start_time.count()) / 1000.0);
  }
}

}  // namespace kjit
