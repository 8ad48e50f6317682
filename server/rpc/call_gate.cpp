#include "server/rpc/call_gate.h"

#include <spdlog/spdlog.h>

#include "server/observe/metrics.h"

namespace kjit {
namespace {

constexpr std::string_view k_request_id_metadata = "kjit-request-id";
constexpr std::string_view k_bearer = "Bearer ";

std::string_view metadata(const grpc::ServerContextBase& context, std::string_view key) {
  const auto& all = context.client_metadata();
  auto found = all.find(grpc::string_ref(key.data(), key.size()));
  if (found == all.end()) return {};
  return std::string_view(found->second.data(), found->second.size());
}

// gRPC names the peer "unix:..." for the socket, "ipv4:"/"ipv6:" for TCP.
bool over_socket(const grpc::ServerContextBase& context) { return context.peer().starts_with("unix:"); }

}  // namespace

CallGate::CallGate(Options options) : options_(std::move(options)) {}

Result<Caller> CallGate::open(grpc::ServerContextBase& context, std::string_view method) {
  Caller caller;
  caller.request_id = accept_request_id(metadata(context, k_request_id_metadata));
  context.AddInitialMetadata(std::string(k_request_id_metadata), caller.request_id);
  {
    std::lock_guard lock(mutex_);
    ++in_flight_;
  }
  if (draining_)
    return make_error(ErrorCode::unavailable, "kjitd is draining (shutting down); send the request to another instance");
  if (!options_.tenants) return caller;

  const std::string_view authorization = metadata(context, "authorization");
  const bool token_required = options_.socket_requires_token || !over_socket(context);
  if (authorization.empty() && !token_required) return caller;  // the local operator
  RequestLogScope scope(caller.request_id);
  if (!authorization.starts_with(k_bearer)) {
    spdlog::warn("{} from {} refused: {}", method, context.peer(),
                 authorization.empty() ? "no token (authorization: Bearer <token>)" : "authorization is not a Bearer token");
    return make_error(ErrorCode::unauthenticated, authorization.empty()
                                                      ? "this listener needs a token: send authorization: Bearer <token>"
                                                      : "authorization must be \"Bearer <token>\"");
  }
  std::optional<Tenant> tenant = options_.tenants->find_by_token(authorization.substr(k_bearer.size()));
  if (!tenant) {
    // Never the token itself, not even in part.
    spdlog::warn("{} from {} refused: the token is no tenant's", method, context.peer());
    return make_error(ErrorCode::unauthenticated, "the token is not valid on this daemon");
  }
  caller.tenant = std::move(tenant->name);
  caller.ns = std::move(tenant->ns);
  return caller;
}

void CallGate::close(const Result<Caller>& caller, std::string_view method, const grpc::Status& status,
                     std::chrono::steady_clock::time_point opened) {
  if (options_.metrics) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count();
    const std::string_view tenant = caller ? caller->label() : std::string_view("(unauthenticated)");
    options_.metrics->record_request(method, static_cast<int>(status.error_code()), tenant, seconds);
  }
  std::lock_guard lock(mutex_);
  if (--in_flight_ == 0) idle_.notify_all();
}

void CallGate::start_draining() { draining_ = true; }

bool CallGate::wait_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return idle_.wait_until(lock, deadline, [&] { return in_flight_ == 0; });
}

size_t CallGate::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

bool call_gone(const grpc::ServerContextBase& context) {
  return context.IsCancelled() || context.deadline() < std::chrono::system_clock::now();
}

}  // namespace kjit
