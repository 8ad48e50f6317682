// The door every RPC of kjitd's services passes: who is calling (a tenant by
// its token; on the socket without one, the user the kernel names, an
// operator or not; anyone else the operator), the request's id, whether the daemon
// still takes work (not while draining), and, when the call ends, its
// metrics. Services call open() first and close() with the status they
// answer; serve() does both around a synchronous handler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/status.h>

#include "kjit/status.h"
#include "server/observe/request_log.h"
#include "server/edge/status_mapping.h"
#include "server/access/local_users.h"
#include "server/access/peer_credentials.h"
#include "server/access/tenants.h"

namespace kjit {

class Metrics;

// Who a request comes from, as the layers below the services need it.
struct Caller {
  std::string tenant;      // the tenant whose token came; empty: none (no tenants, or the socket without one)
  std::string ns;          // compile entries' namespace; empty: the default one
  std::string blob_ns;     // client blobs' namespace: the tenant's, a socket user's own, or "" (the operator's)
  std::string request_id;  // in the log, in the answer's "kjit-request-id" metadata
  // The socket's peer as the kernel gave it (uid, gid, pid) and what the
  // daemon decided of it; null off the socket (TCP) and for in-process
  // listeners of tests, which cannot tell.
  std::shared_ptr<const LocalUser> user;
  // Root, kjitd's user or admin_group's member on the socket, anyone where
  // no one can be told apart (no tenants, TCP), or a tenant marked
  // `operator = true`.
  bool operator_ = true;
  bool is_operator() const { return operator_; }
  // Metrics' and the queue's name: the tenant, else the socket user's
  // bounded "uid:<uid>", else the operator's.
  std::string_view label() const {
    if (!tenant.empty()) return tenant;
    return user ? std::string_view(user->label) : k_operator_label;
  }
  // What the log says of who called: "uid 1000 gid 1000 pid 4242"; empty off the socket.
  std::string_view who() const { return user ? std::string_view(user->log) : std::string_view(); }
};

class CallGate {
 public:
  struct Options {
    std::shared_ptr<const TenantRegistry> tenants;  // null: no tenants, no tokens asked for (set_tenants replaces)
    bool socket_requires_token = false;             // with tenants: the unix socket asks for one too
    std::shared_ptr<Metrics> metrics;               // null: none kept
    // Who each connection handed over by fd is (the daemon's own socket);
    // null: no connection comes that way, a call naming one is refused.
    std::shared_ptr<const PeerRegistry> peers;
    // Who the operators are, for refusals; null: nobody said.
    std::shared_ptr<const LocalUserPolicy> local_users;
  };
  explicit CallGate(Options options);

  // Names the call (its id in the initial metadata), authenticates it, and
  // counts it in flight. UNAUTHENTICATED when the listener asks for a token
  // and none valid came (logged without the token); UNAVAILABLE while
  // draining. close() must follow either way.
  Result<Caller> open(grpc::ServerContextBase& context, std::string_view method);
  // The call's end: metrics by method, code and tenant, and no longer in flight.
  void close(const Result<Caller>& caller, std::string_view method, const grpc::Status& status,
             std::chrono::steady_clock::time_point opened);

  // open(), the handler with the caller (under its log scope), close().
  template <typename Handler>
  grpc::Status serve(grpc::ServerContextBase* context, std::string_view method, Handler&& handler) {
    const auto opened = std::chrono::steady_clock::now();
    Result<Caller> caller = open(*context, method);
    grpc::Status status;
    if (!caller) {
      status = to_grpc_status(caller.error(), *context);
    } else {
      RequestLogScope scope(caller->request_id, caller->who());
      status = handler(*caller);
    }
    close(caller, method, status, opened);
    return status;
  }

  // The same for a callback-API handler that answers where it stands.
  template <typename Handler>
  grpc::ServerUnaryReactor* serve_now(grpc::CallbackServerContext* context, std::string_view method,
                                      Handler&& handler) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(serve(context, method, std::forward<Handler>(handler)));
    return reactor;
  }

  // A reload's tenants: every call opened from now on checks its token
  // against them, on connections already open too; calls in flight keep
  // the caller they were opened with. Null: no tokens asked for.
  void set_tenants(std::shared_ptr<const TenantRegistry> tenants);

  // From now on new calls are refused (UNAVAILABLE) and health says
  // NOT_SERVING (the daemon does that part); calls in flight go on.
  void start_draining();
  bool draining() const { return draining_; }
  // Waits until no call is in flight or the deadline passes; true when idle.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  size_t in_flight() const;
  Metrics* metrics() const { return options_.metrics.get(); }
  // PERMISSION_DENIED for a caller who is not the operator: what it may do
  // instead, and whom to ask.
  Error operators_only(std::string_view action, std::string_view instead) const;

 private:
  Options options_;
  // Read once per call: a reload swaps it while calls are opened.
  std::atomic<std::shared_ptr<const TenantRegistry>> tenants_;
  std::atomic<bool> draining_{false};
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  size_t in_flight_ = 0;
};

// Whether the call's client has gone away or its deadline has passed.
bool call_gone(const grpc::ServerContextBase& context);

}  // namespace kjit
