// kjitd's unix socket, accepted by kjitd itself: each connection's kernel
// credentials are read (SO_PEERCRED, SO_PEERGROUPS), decided on
// (LocalUserPolicy: operator or not, its blob namespace) and recorded in the
// PeerRegistry under the name gRPC will give it, and only then is the fd
// handed to gRPC (grpc::AddInsecureChannelFromFd). gRPC 1.51 gives a handler
// no way to ask who is on a unix socket; see peer_credentials.h for why a
// call always finds its own connection's entry.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "kjit/status.h"
#include "server/access/local_users.h"
#include "server/access/peer_credentials.h"

namespace grpc {
class Server;
}

namespace kjit {

// A unix stream socket bound at path and listening; the caller owns the fd.
Result<int> listen_on_unix_socket(const std::string& path);

class SocketAcceptor {
 public:
  // Takes listen_fd (listen_on_unix_socket's); closes it when stopped.
  SocketAcceptor(int listen_fd, std::shared_ptr<PeerRegistry> peers, std::shared_ptr<const LocalUserPolicy> policy);
  ~SocketAcceptor();
  SocketAcceptor(const SocketAcceptor&) = delete;
  SocketAcceptor& operator=(const SocketAcceptor&) = delete;

  // Starts the accept thread: connections go to server, which must be
  // started and must outlive stop().
  Status start(grpc::Server* server);
  // No connection is handed over after this returns; idempotent. Call it
  // before the server shuts down.
  void stop();

  uint64_t accepted() const { return accepted_; }

 private:
  void run(grpc::Server* server);

  int listen_fd_;
  int wake_fd_ = -1;  // an eventfd: stop() wakes the thread's poll
  std::shared_ptr<PeerRegistry> peers_;
  std::shared_ptr<const LocalUserPolicy> policy_;
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0};
};

}  // namespace kjit
