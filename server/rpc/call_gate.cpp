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

// gRPC names the peer "ipv4:"/"ipv6:" on TCP; the daemon's socket hands it
// connections by fd ("fd:<N>"); "unix:..." is a socket gRPC itself listens
// on (tests' in-process servers).
bool over_socket(std::string_view peer) { return peer.starts_with("fd:") || peer.starts_with("unix:"); }

// Where a refusal's log line says the call came from.
std::string from_whom(std::string_view peer, const Caller& caller) {
  return caller.user ? std::string(peer) + " (" + std::string(caller.who()) + ")" : std::string(peer);
}

}  // namespace

CallGate::CallGate(Options options) : options_(std::move(options)), tenants_(options_.tenants) {}

void CallGate::set_tenants(std::shared_ptr<const TenantRegistry> tenants) { tenants_.store(std::move(tenants)); }

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
  const std::string peer = context.peer();
  if (options_.peers) caller.user = options_.peers->find(peer);
  if (!caller.user && peer.starts_with("fd:")) {
    // Only the daemon's own socket hands gRPC connections by fd, each one
    // recorded first: one without an entry is nobody kjitd could name.
    spdlog::error("{} from {} refused: no credentials were recorded for the connection", method, peer);
    return make_error(ErrorCode::permission_denied, "kjitd cannot tell who is on this connection");
  }
  // Without a token: a socket user as the kernel names it; off the socket
  // (no tenants asked for), the operator.
  if (caller.user) {
    caller.operator_ = caller.user->is_operator;
    caller.blob_ns = caller.user->blob_ns;
  }
  const std::shared_ptr<const TenantRegistry> tenants = tenants_.load();
  if (!tenants) return caller;

  const std::string_view authorization = metadata(context, "authorization");
  const bool token_required = options_.socket_requires_token || !over_socket(peer);
  if (authorization.empty() && !token_required) return caller;
  RequestLogScope scope(caller.request_id, caller.who());
  if (!authorization.starts_with(k_bearer)) {
    spdlog::warn("{} from {} refused: {}", method, from_whom(peer, caller),
                 authorization.empty() ? "no token (authorization: Bearer <token>)" : "authorization is not a Bearer token");
    return make_error(ErrorCode::unauthenticated, authorization.empty()
                                                      ? "this listener needs a token: send authorization: Bearer <token>"
                                                      : "authorization must be \"Bearer <token>\"");
  }
  std::optional<Tenant> tenant = tenants->find_by_token(authorization.substr(k_bearer.size()));
  if (!tenant) {
    // Never the token itself, not even in part.
    spdlog::warn("{} from {} refused: the token is no tenant's", method, from_whom(peer, caller));
    return make_error(ErrorCode::unauthenticated, "the token is not valid on this daemon");
  }
  // A token decides, whoever sends it: the tenant's namespace for both
  // kinds of entries, and the operator's rights only if the file gives them.
  caller.tenant = std::move(tenant->name);
  caller.ns = std::move(tenant->ns);
  caller.blob_ns = caller.ns;
  caller.operator_ = tenant->is_operator;
  return caller;
}

Error CallGate::operators_only(std::string_view action, std::string_view instead) const {
  std::string message = std::string(action) + " is an operator's action";
  if (!instead.empty()) message += "; " + std::string(instead);
  message += options_.local_users ? "; or ask an operator (" + options_.local_users->operators() + ")"
                                  : "; or ask kjitd's operator";
  return make_error(ErrorCode::permission_denied, message);
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
