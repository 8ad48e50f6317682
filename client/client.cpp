// The C++ client library over kjit.v1 gRPC.
#include "kjit/client.h"

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "client/cache_stats_wire.h"
#include "client/client_impl.h"
#include "client/compile_request_wire.h"
#include "convert/wire_convert.h"

namespace kjit {
namespace {

ErrorCode from_grpc_code(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT: return ErrorCode::invalid_argument;
    case grpc::StatusCode::FAILED_PRECONDITION: return ErrorCode::failed_precondition;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return ErrorCode::resource_exhausted;
    case grpc::StatusCode::UNAVAILABLE: return ErrorCode::unavailable;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return ErrorCode::deadline_exceeded;
    case grpc::StatusCode::NOT_FOUND: return ErrorCode::not_found;
    case grpc::StatusCode::UNIMPLEMENTED: return ErrorCode::unimplemented;
    case grpc::StatusCode::UNAUTHENTICATED: return ErrorCode::unauthenticated;
    case grpc::StatusCode::PERMISSION_DENIED: return ErrorCode::permission_denied;
    case grpc::StatusCode::CANCELLED: return ErrorCode::cancelled;
    default: return ErrorCode::internal;
  }
}

std::string trailer(const grpc::ClientContext& context, const char* key) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(key);
  return it == trailers.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

std::string channel_target(const std::string& address) {
  if (address.starts_with("unix:") || address.find(':') != std::string::npos) return address;
  return "unix:" + address;
}

}  // namespace

Error from_grpc_status(const grpc::Status& status, const grpc::ClientContext& context) {
  Error error{from_grpc_code(status.error_code()), status.error_message(), trailer(context, k_log_trailer)};
  if (std::string message = trailer(context, k_message_trailer); !message.empty()) error.message = message;
  if (std::string retry = trailer(context, k_retry_after_trailer); !retry.empty())
    error.retry_after_ms = static_cast<uint32_t>(std::strtoul(retry.c_str(), nullptr, 10));
  return error;
}

namespace {

Result<std::string> read_pem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (text.empty())
    return make_error(ErrorCode::failed_precondition, std::string("cannot read the TLS ") + what + " " + path);
  return text;
}

// TLS credentials when options ask for TLS, insecure ones otherwise.
Result<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const ClientOptions& options,
                                                                      grpc::ChannelArguments& args) {
  if (options.tls_ca_file.empty()) {
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty())
      return make_error(ErrorCode::invalid_argument, "a TLS client certificate needs tls_ca_file too");
    return grpc::InsecureChannelCredentials();
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty())
    return make_error(ErrorCode::invalid_argument, "a TLS client certificate needs both its file and its key");
  grpc::SslCredentialsOptions ssl;
  Result<std::string> ca = read_pem(options.tls_ca_file, "CA");
  if (!ca) return ca.error();
  ssl.pem_root_certs = std::move(ca.value());
  if (!options.tls_cert_file.empty()) {
    Result<std::string> cert = read_pem(options.tls_cert_file, "certificate");
    if (!cert) return cert.error();
    Result<std::string> key = read_pem(options.tls_key_file, "key");
    if (!key) return key.error();
    ssl.pem_cert_chain = std::move(cert.value());
    ssl.pem_private_key = std::move(key.value());
  }
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  return grpc::SslCredentials(ssl);
}

}  // namespace

Client::Client(const std::string& address, ClientOptions options) : impl_(std::make_unique<Impl>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  args.SetMaxSendMessageSize(INT32_MAX);
  // Compiler logs travel in trailers; allow them to be large.
  args.SetInt(GRPC_ARG_MAX_METADATA_SIZE, 64 << 20);
  // A call may wait long on a quiet stream (a claim's waiter): ping the
  // daemon every 20 s while calls are open, so one whose host vanished is
  // noticed within 30 s rather than at the wait's end. kjitd admits pings
  // every 10 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Without the first, gRPC 1.51 spaces pings on a quiet connection 5 min
  // apart; without the second, newer gRPCs wait 60 s for a ping's answer.
  args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 20'000);
  args.SetInt("grpc.http2.ping_timeout_ms", 10'000);
  Result<std::shared_ptr<grpc::ChannelCredentials>> credentials = channel_credentials(options, args);
  if (!credentials) {
    impl_->broken = credentials.error();
    credentials = grpc::InsecureChannelCredentials();  // never used: every call stops at `broken`
  }
  if (!options.token.empty()) impl_->authorization = "Bearer " + options.token;
  impl_->channel = grpc::CreateCustomChannel(channel_target(address), *credentials, args);
  impl_->compiler = v1::Compiler::NewStub(impl_->channel);
  impl_->health = grpc::health::v1::Health::NewStub(impl_->channel);
  impl_->launcher = v1::Launcher::NewStub(impl_->channel);
  impl_->cache = v1::Cache::NewStub(impl_->channel);
  impl_->recipes = v1::Recipes::NewStub(impl_->channel);
  impl_->diagnostics = v1::Diagnostics::NewStub(impl_->channel);
  impl_->options = options;
}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

namespace {

void to_wire(const KernelRef& kernel, v1::KernelSource& wire) {
  if (!kernel.compile.input.empty()) to_wire(kernel.compile, *wire.mutable_compile());
  else wire.set_key(kernel.key);
  wire.set_kernel(kernel.kernel);
}

void to_wire(const LaunchConfig& config, v1::LaunchConfig& wire) {
  to_proto(config.grid, *wire.mutable_grid());
  to_proto(config.block, *wire.mutable_block());
  to_proto(config.cluster, *wire.mutable_cluster());
  wire.set_dynamic_shared_bytes(config.dynamic_shared_bytes);
  wire.set_cooperative(config.cooperative);
  wire.set_programmatic_dependent_launch(config.programmatic_dependent_launch);
  wire.set_stream_priority(config.stream_priority);
}

PlannedLaunch from_wire(const v1::LaunchPlan& plan) {
  PlannedLaunch out;
  out.kernel = plan.kernel();
  out.target = plan.target();
  out.grid = from_proto(plan.grid());
  out.block = from_proto(plan.block());
  out.dynamic_shared_bytes = plan.dynamic_shared_bytes();
  out.static_shared_bytes = plan.static_shared_bytes();
  for (const v1::FunctionAttribute& a : plan.function_attributes())
    out.function_attributes.push_back({a.name(), a.id(), {a.value()}});
  for (const v1::LaunchAttribute& a : plan.launch_attributes())
    out.launch_attributes.push_back({a.name(), a.id(), {a.values().begin(), a.values().end()}});
  out.oversized_shared_memory = plan.oversized_shared_memory();
  out.rests_on_ptx = plan.rests_on_ptx();
  out.limits_from_device = plan.limits_from_device();
  out.notes.assign(plan.notes().begin(), plan.notes().end());
  out.description = plan.description();
  return out;
}

}  // namespace

Result<CompileResult> Client::compile(const CompileRequest& request) const {
  v1::CompileRequest wire;
  to_wire(request, wire);
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::CompileResponse response;
  grpc::Status status = impl_->compiler->Compile(&context, wire, &response);
  if (!status.ok()) return from_grpc_status(status, context);

  CompileResult result;
  result.artifact_kind = from_proto(response.artifact_kind());
  result.artifact = std::move(*response.mutable_artifact());
  result.target = response.target();
  for (const v1::StageTiming& timing : response.timings()) {
    StageTiming stage{timing.stage(), timing.ms(), {}};
    for (const v1::PassTiming& pass : timing.passes()) stage.passes.push_back({pass.pass(), pass.ms()});
    result.timings.push_back(std::move(stage));
  }
  result.log = response.log();
  for (const v1::KernelInfo& kernel : response.kernels()) result.kernels.push_back(from_proto(kernel));
  result.lowered_names.insert(response.lowered_names().begin(), response.lowered_names().end());
  result.server_ms = response.server_ms();
  result.key = response.key();
  for (const v1::KeyComponent& c : response.key_components()) result.key_components.push_back({c.name(), c.value()});
  result.pipeline = response.pipeline();
  result.notes.assign(response.notes().begin(), response.notes().end());
  result.cache = response.cache();
  result.toolkit = response.toolkit();
  result.request_id = response.request_id();
  result.triton_metadata = response.triton_metadata();
  result.triton_build = response.triton_build();
  result.triton_files.insert(response.triton_files().begin(), response.triton_files().end());
  for (const v1::FatbinEntry& e : response.entries()) {
    FatbinEntry entry{e.target(), from_proto(e.kind()), e.size(), e.cache(), e.key(), e.toolkit(), {}, {}};
    for (const v1::KernelInfo& kernel : e.kernels()) entry.kernels.push_back(from_proto(kernel));
    entry.notes.assign(e.notes().begin(), e.notes().end());
    result.entries.push_back(std::move(entry));
  }
  return result;
}

Result<PipelineDescription> Client::describe_pipeline(InputKind input, const std::string& target,
                                                      const std::string& pipeline) const {
  v1::DescribePipelineRequest request;
  request.set_input_kind(to_proto(input));
  request.set_target(target);
  request.set_pipeline(pipeline);
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::DescribePipelineResponse response;
  grpc::Status status = impl_->compiler->DescribePipeline(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  PipelineDescription out;
  out.name = response.name();
  out.toml = response.toml();
  out.known_pipelines.assign(response.known_pipelines().begin(), response.known_pipelines().end());
  out.plugins.assign(response.active_plugins().begin(), response.active_plugins().end());
  return out;
}

Result<PlannedLaunch> Client::plan_launch(const KernelRef& kernel, const LaunchConfig& config) const {
  v1::PlanLaunchRequest request;
  to_wire(kernel, *request.mutable_source());
  request.set_device_target(kernel.device_target);
  to_wire(config, *request.mutable_config());
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::PlanLaunchResponse response;
  grpc::Status status = impl_->launcher->PlanLaunch(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  PlannedLaunch plan = from_wire(response.plan());
  plan.kernel_info = from_proto(response.kernel());
  plan.key = response.key();
  return plan;
}

Result<RemoteLaunchResult> Client::launch(const KernelRef& kernel, const LaunchConfig& config,
                                          const std::vector<LaunchValue>& args) const {
  v1::LaunchRequest request;
  to_wire(kernel, *request.mutable_source());
  to_wire(config, *request.mutable_config());
  for (const LaunchValue& value : args) {
    v1::LaunchArgument* arg = request.add_args();
    switch (value.kind) {
      case LaunchValue::Kind::i32: arg->set_i32(static_cast<int32_t>(value.integer)); break;
      case LaunchValue::Kind::u32: arg->set_u32(static_cast<uint32_t>(value.integer)); break;
      case LaunchValue::Kind::i64: arg->set_i64(value.integer); break;
      case LaunchValue::Kind::u64: arg->set_u64(static_cast<uint64_t>(value.integer)); break;
      case LaunchValue::Kind::f32: arg->set_f32(static_cast<float>(value.real)); break;
      case LaunchValue::Kind::f64: arg->set_f64(value.real); break;
      case LaunchValue::Kind::buffer:
        arg->mutable_buffer()->set_data(value.buffer.data);
        arg->mutable_buffer()->set_size(value.buffer.size);
        arg->mutable_buffer()->set_return_contents(value.buffer.return_contents);
        break;
    }
  }
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::LaunchResponse response;
  grpc::Status status = impl_->launcher->Launch(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  RemoteLaunchResult result;
  result.outputs.assign(response.outputs().begin(), response.outputs().end());
  result.kernel_ms = response.kernel_ms();
  result.plan = from_wire(response.plan());
  result.plan.key = response.key();
  return result;
}

Result<CacheStats> Client::cache_stats() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::StatsResponse response;
  grpc::Status status = impl_->cache->Stats(&context, v1::StatsRequest(), &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return to_cache_stats(response);
}

Result<std::vector<CacheListing>> Client::cache_list(uint32_t limit) const { return cache_list(limit, {}); }

Result<std::vector<CacheListing>> Client::cache_list(uint32_t limit, const std::string& blob_namespace) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ListRequest request;
  request.set_limit(limit);
  request.set_blob_namespace(blob_namespace);
  v1::ListResponse response;
  grpc::Status status = impl_->cache->List(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  std::vector<CacheListing> out;
  for (const v1::CacheListing& e : response.entries())
    out.push_back({e.key(), e.bytes(), e.last_access_unix(), e.blob_kind(), e.blob_namespace(), e.blob_key(),
                   e.blob_name()});
  return out;
}

Status Client::cache_remove(const std::string& key) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::RemoveRequest request;
  request.set_key(key);
  v1::RemoveResponse response;
  grpc::Status status = impl_->cache->Remove(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return Ok{};
}

Result<CacheGcResult> Client::cache_gc(uint64_t max_bytes) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::GcRequest request;
  request.set_max_bytes(max_bytes);
  v1::GcResponse response;
  grpc::Status status = impl_->cache->Gc(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return CacheGcResult{response.removed_entries(), response.removed_bytes(), response.entries_after(), response.bytes_after()};
}

Result<CacheVerifyResult> Client::cache_verify() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::VerifyResponse response;
  grpc::Status status = impl_->cache->Verify(&context, v1::VerifyRequest(), &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return CacheVerifyResult{response.checked(), response.removed(), response.temp_files_removed()};
}

Result<KeyExplanation> Client::explain(const ExplainSide& left, const ExplainSide& right) const {
  v1::ExplainRequest request;
  auto side = [](const ExplainSide& from, v1::ExplainSide& to) {
    if (!from.request.input.empty()) to_wire(from.request, *to.mutable_request());
    else to.set_key(from.key);
  };
  side(left, *request.mutable_left());
  side(right, *request.mutable_right());
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ExplainResponse response;
  grpc::Status status = impl_->cache->Explain(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  KeyExplanation out;
  out.left_key = response.left_key();
  out.right_key = response.right_key();
  for (const v1::KeyComponent& c : response.left_components()) out.left.push_back({c.name(), c.value()});
  for (const v1::KeyComponent& c : response.right_components()) out.right.push_back({c.name(), c.value()});
  for (const v1::KeyDifference& d : response.differences())
    out.differences.push_back({d.name(), d.left(), d.right(), d.present_left(), d.present_right()});
  return out;
}

Result<std::string> Client::echo(const std::string& payload) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::EchoRequest request;
  request.set_payload(payload);
  v1::EchoResponse response;
  grpc::Status status = impl_->diagnostics->Echo(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return std::move(*response.mutable_payload());
}

Result<std::string> Client::health() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = impl_->health->Check(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

Result<DaemonStatus> Client::status() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::GetStatusRequest request;
  v1::GetStatusResponse response;
  grpc::Status status = impl_->diagnostics->GetStatus(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  DaemonStatus out;
  out.version = response.version();
  out.confinement_mode = response.confinement().mode();
  out.confinement = response.confinement().description();
  out.worker_confinement = response.confinement().worker_confinement();
  for (const std::string& tier : response.cache().tiers()) out.cache_tiers.push_back(tier);
  out.cache_sharing = response.cache().sharing();
  out.memory_bytes = response.bounds().memory_bytes();
  out.cpu_seconds = response.bounds().cpu_seconds();
  out.open_files = response.bounds().open_files();
  out.output_bytes = response.bounds().output_bytes();
  out.timeout_seconds = response.bounds().timeout_seconds();
  out.max_workers = response.workers().max_workers();
  out.live_workers = response.workers().live_workers();
  out.ready_workers = response.workers().ready_workers();
  out.busy_workers = response.workers().busy_workers();
  for (const auto& [name, live] : response.workers().live_by_class()) out.live_workers_by_class[name] = live;
  for (const v1::ConfigSetting& setting : response.settings())
    out.settings.push_back({setting.key(), setting.value(), setting.flag()});
  out.workers_started = response.workers().started();
  out.last_worker_start_ms = response.workers().last_start_ms();
  const v1::FleetStatus& fleet = response.fleet();
  out.fleet.targets.assign(fleet.targets().begin(), fleet.targets().end());
  out.fleet.queued = fleet.queued();
  out.fleet.running = fleet.running();
  out.fleet.compiled = fleet.compiled();
  out.fleet.cached = fleet.cached();
  out.fleet.failed = fleet.failed();
  out.fleet.dropped = fleet.dropped();
  out.fleet.yielded = fleet.yielded();
  out.fleet.last_failure = fleet.last_failure();
  return out;
}

Result<ToolkitListing> Client::toolkits() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ListToolkitsRequest request;
  v1::ListToolkitsResponse response;
  grpc::Status status = impl_->compiler->ListToolkits(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  ToolkitListing out;
  for (const v1::ToolkitInfo& t : response.toolkits()) {
    ToolkitDescription d;
    d.origin = t.origin();
    d.home = t.home();
    d.version = t.version();
    d.nvrtc = t.nvrtc();
    d.nvjitlink = t.nvjitlink();
    d.nvfatbin = t.nvfatbin();
    d.archs.assign(t.archs().begin(), t.archs().end());
    d.include_dirs.assign(t.include_dirs().begin(), t.include_dirs().end());
    d.notes.assign(t.notes().begin(), t.notes().end());
    d.pinned = t.pinned();
    d.libdevice = t.libdevice();
    out.toolkits.push_back(std::move(d));
  }
  for (const v1::TargetRoute& r : response.routes())
    out.routes.push_back({r.target(), r.toolkit(), r.supported(), r.reason()});
  out.policy = response.policy();
  out.fatbin_toolkit = response.fatbin_toolkit();
  for (const v1::TritonBuild& b : response.triton()) {
    ToolkitListing::TritonBuild build;
    build.name = b.name();
    build.version = b.version();
    build.distribution = b.distribution();
    build.python = b.python();
    build.backends.assign(b.backends().begin(), b.backends().end());
    build.cuda_archs.assign(b.cuda_archs().begin(), b.cuda_archs().end());
    build.hip_archs.assign(b.hip_archs().begin(), b.hip_archs().end());
    build.plugins.assign(b.plugins().begin(), b.plugins().end());
    build.ptxas.assign(b.ptxas().begin(), b.ptxas().end());
    build.options.assign(b.options().begin(), b.options().end());
    build.libtriton_sha256 = b.libtriton_sha256();
    build.tlx = b.tlx();
    build.tlx_provider = b.tlx_provider();
    auto read_plugins = [](const auto& from, std::vector<ToolkitListing::TritonPlugin>& to) {
      for (const v1::TritonPlugin& p : from) {
        ToolkitListing::TritonPlugin plugin{p.distribution(), p.version(), {}, p.stages_hook_sha256(),
                                            {p.environment().begin(), p.environment().end()}};
        for (const v1::TritonPluginLibrary& library : p.libraries())
          plugin.libraries.emplace_back(library.path(), library.sha256());
        to.push_back(std::move(plugin));
      }
    };
    read_plugins(b.installed_plugins(), build.installed_plugins);
    read_plugins(b.configured_plugins(), build.configured_plugins);
    build.plugin_loader = b.plugin_loader();
    build.borrowed_ptxas = {b.borrowed_ptxas().path(), b.borrowed_ptxas().version(), b.borrowed_ptxas().sha256(),
                            b.borrowed_ptxas().from_build(),
                            {b.borrowed_ptxas().cuda_archs().begin(), b.borrowed_ptxas().cuda_archs().end()}};
    build.is_default = b.is_default();
    build.error = b.error();
    out.triton.push_back(std::move(build));
  }
  return out;
}

}  // namespace kjit
