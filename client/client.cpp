// The C++ client library over kjit.v1 gRPC.
#include "kjit/client.h"

#include <grpcpp/grpcpp.h>

#include "convert/wire_convert.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "kjit/v1/compiler.grpc.pb.h"

namespace kjit {
namespace {

// Must match server/status_mapping.h.
constexpr const char* k_log_trailer = "kjit-log-bin";
constexpr const char* k_message_trailer = "kjit-message-bin";

ErrorCode from_grpc_code(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT: return ErrorCode::invalid_argument;
    case grpc::StatusCode::FAILED_PRECONDITION: return ErrorCode::failed_precondition;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return ErrorCode::resource_exhausted;
    case grpc::StatusCode::UNAVAILABLE: return ErrorCode::unavailable;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return ErrorCode::deadline_exceeded;
    case grpc::StatusCode::NOT_FOUND: return ErrorCode::not_found;
    case grpc::StatusCode::UNIMPLEMENTED: return ErrorCode::unimplemented;
    default: return ErrorCode::internal;
  }
}

std::string trailer(const grpc::ClientContext& context, const char* key) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(key);
  return it == trailers.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

Error from_grpc_status(const grpc::Status& status, const grpc::ClientContext& context) {
  Error error{from_grpc_code(status.error_code()), status.error_message(), trailer(context, k_log_trailer)};
  if (std::string message = trailer(context, k_message_trailer); !message.empty()) error.message = message;
  return error;
}

std::string channel_target(const std::string& address) {
  if (address.starts_with("unix:") || address.find(':') != std::string::npos) return address;
  return "unix:" + address;
}

}  // namespace

struct Client::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Compiler::Stub> compiler;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
  ClientOptions options;

  void set_deadline(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() + options.timeout);
  }
};

Client::Client(const std::string& address, ClientOptions options) : impl_(std::make_unique<Impl>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  args.SetMaxSendMessageSize(INT32_MAX);
  // Compiler logs travel in trailers; allow them to be large.
  args.SetInt(GRPC_ARG_MAX_METADATA_SIZE, 64 << 20);
  impl_->channel = grpc::CreateCustomChannel(channel_target(address), grpc::InsecureChannelCredentials(), args);
  impl_->compiler = v1::Compiler::NewStub(impl_->channel);
  impl_->health = grpc::health::v1::Health::NewStub(impl_->channel);
  impl_->options = options;
}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

Result<CompileResult> Client::compile(const CompileRequest& request) const {
  v1::CompileRequest wire;
  wire.mutable_input()->set_kind(to_proto(request.input_kind));
  wire.mutable_input()->set_data(request.input);
  wire.mutable_input()->set_name(request.input_name);
  wire.set_target(request.target);
  for (const std::string& option : request.options) wire.add_options(option);
  for (const auto& [name, content] : request.headers) (*wire.mutable_headers())[name] = content;
  for (const std::string& expression : request.name_expressions) wire.add_name_expressions(expression);
  wire.set_artifact(to_proto(request.artifact));
  wire.set_pipeline(request.pipeline);
  for (const auto& [key, value] : request.pass_args) (*wire.mutable_pass_args())[key] = value;
  wire.set_allow_ptx_fallback(request.allow_ptx_fallback);

  grpc::ClientContext context;
  impl_->set_deadline(context);
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
  return result;
}

Result<PipelineDescription> Client::describe_pipeline(InputKind input, const std::string& target,
                                                      const std::string& pipeline) const {
  v1::DescribePipelineRequest request;
  request.set_input_kind(to_proto(input));
  request.set_target(target);
  request.set_pipeline(pipeline);
  grpc::ClientContext context;
  impl_->set_deadline(context);
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

Result<std::string> Client::health() const {
  grpc::ClientContext context;
  impl_->set_deadline(context);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = impl_->health->Check(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

}  // namespace kjit
