#include "server/rpc/diagnostics_service.h"

#include "server/config/config_keys.h"
#include "server/workers/compile_workers.h"

namespace kjit {

DiagnosticsService::DiagnosticsService(Facts facts, std::shared_ptr<const CompileWorkers> workers,
                                       std::shared_ptr<CallGate> gate, Reloader reload)
    : facts_(std::move(facts)),
      config_(std::make_shared<const DaemonConfig>(facts_.config)),
      reload_(std::move(reload)),
      workers_(std::move(workers)),
      gate_(gate ? std::move(gate) : std::make_shared<CallGate>(CallGate::Options{})) {}

void DiagnosticsService::set_config(DaemonConfig config) {
  config_.store(std::make_shared<const DaemonConfig>(std::move(config)));
}

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
    const std::shared_ptr<const DaemonConfig> config = config_.load();
    describe_status(*config, response);
    if (caller.is_operator()) describe_settings(*config, response);
    // A failure's reason may quote any namespace's request: the operator's business.
    else if (response->has_fleet()) response->mutable_fleet()->clear_last_failure();
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* DiagnosticsService::Reload(grpc::CallbackServerContext* context, const v1::ReloadRequest*,
                                                     v1::ReloadResponse* response) {
  return gate_->serve_now(context, "Reload", [&](const Caller& caller) {
    // Only an operator's (a tenant's token only where the file marks it operator):
    // the tenants file is what it would reload.
    if (!caller.is_operator())
      return to_grpc_status(gate_->operators_only("reloading kjitd's configuration", ""), *context);
    if (!reload_)
      return to_grpc_status(make_error(ErrorCode::failed_precondition, "this server has no configuration to reload"),
                            *context);
    Result<ReloadReport> report = reload_();
    if (!report) return to_grpc_status(report.error(), *context);
    for (const std::string& what : report->reloaded) response->add_reloaded(what);
    for (const std::string& key : report->needs_restart) response->add_needs_restart(key);
    return grpc::Status::OK;
  });
}

void DiagnosticsService::describe_settings(const DaemonConfig& config, v1::GetStatusResponse* response) {
  for (const ConfigKey& key : config_keys()) {
    v1::ConfigSetting* setting = response->add_settings();
    setting->set_key(std::string(key.path));
    setting->set_value(config_value_text(key, config));
    setting->set_flag(std::string(key.flag));
  }
}

void DiagnosticsService::describe_status(const DaemonConfig& config, v1::GetStatusResponse* response) const {
  response->set_version(KJIT_VERSION);
  v1::ConfinementStatus& confinement = *response->mutable_confinement();
  confinement.set_mode(workers_ ? config.sandbox : "in-process");
  confinement.set_description(facts_.confinement);
  if (!facts_.cache_tiers.empty()) {
    v1::CacheStatus& cache = *response->mutable_cache();
    for (const std::string& tier : facts_.cache_tiers) cache.add_tiers(tier);
    cache.set_sharing(facts_.cache_sharing);
  }
  v1::CompileBoundsStatus& bounds = *response->mutable_bounds();
  bounds.set_memory_bytes(config.compile_bounds.memory_bytes);
  bounds.set_cpu_seconds(config.compile_bounds.cpu_seconds);
  bounds.set_open_files(config.compile_bounds.open_files);
  bounds.set_output_bytes(config.compile_bounds.output_bytes);
  bounds.set_timeout_seconds(config.compile_timeout_s);
  if (fleet_) {
    const FleetStats stats = fleet_();
    v1::FleetStatus& fleet = *response->mutable_fleet();
    for (const Target& target : config.fleet_targets) fleet.add_targets(target.canonical());
    fleet.set_queued(stats.queued);
    fleet.set_running(stats.running);
    fleet.set_compiled(stats.compiled);
    fleet.set_cached(stats.cached);
    fleet.set_failed(stats.failed);
    fleet.set_dropped(stats.dropped);
    fleet.set_yielded(stats.yielded);
    fleet.set_last_failure(stats.last_failure);
  }
  v1::CompileWorkersStatus& workers = *response->mutable_workers();
  if (workers_) {
    const CompileWorkers::StartReport start = workers_->last_start();
    confinement.set_worker_confinement(start.confinement);
    workers.set_max_workers(config.compile_workers);
    workers.set_live_workers(static_cast<uint32_t>(workers_->live_workers()));
    workers.set_ready_workers(static_cast<uint32_t>(workers_->ready_workers()));
    workers.set_busy_workers(static_cast<uint32_t>(workers_->busy_workers()));
    // Not counters(): that also reads every worker's PCH files from disk.
    for (const auto& [name, live] : workers_->live_by_class())
      (*workers.mutable_live_by_class())[name] = static_cast<uint32_t>(live);
    workers.set_started(start.started);
    workers.set_last_start_ms(static_cast<double>(start.start_time.count()) / 1000.0);
  }
}

}  // namespace kjit
