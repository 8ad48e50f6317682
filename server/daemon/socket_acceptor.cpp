#include "server/daemon/socket_acceptor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <spdlog/spdlog.h>

namespace kjit {

Result<int> listen_on_unix_socket(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path))
    return make_error(ErrorCode::invalid_argument, "socket path is too long for a unix socket: " + path);
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(ErrorCode::internal, std::string("socket: ") + std::strerror(errno));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int saved = errno;
    ::close(fd);
    return make_error(ErrorCode::failed_precondition, "cannot listen on unix:" + path + ": " + std::strerror(saved));
  }
  return fd;
}

SocketAcceptor::SocketAcceptor(int listen_fd, std::shared_ptr<PeerRegistry> peers,
                               std::shared_ptr<const LocalUserPolicy> policy)
    : listen_fd_(listen_fd), peers_(std::move(peers)), policy_(std::move(policy)) {}

SocketAcceptor::~SocketAcceptor() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Status SocketAcceptor::start(grpc::Server* server) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return make_error(ErrorCode::internal, std::string("eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this, server] { run(server); });
  return Ok{};
}

void SocketAcceptor::stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void SocketAcceptor::run(grpc::Server* server) {
  bool warned_full = false;
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    // Out of descriptors, a pending connection keeps the socket readable:
    // look again a little later instead of spinning.
    if (::poll(fds, 2, warned_full ? 100 : -1) < 0 && errno != EINTR) {
      spdlog::error("the socket's accept loop stops: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    // Non-blocking, as gRPC's endpoints are.
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if (!warned_full) spdlog::warn("cannot accept on the socket: {}; retrying", std::strerror(errno));
        warned_full = true;
      }
      continue;
    }
    warned_full = false;
    Result<PeerCredentials> credentials = read_peer_credentials(fd);
    if (!credentials) {
      spdlog::warn("socket connection refused: {}", credentials.error().message);
      ::close(fd);
      continue;
    }
    // Recorded before gRPC has the fd: any call it reports as "fd:<fd>"
    // from now on is this connection's.
    peers_->record(fd, policy_->decide(*credentials));
    ++accepted_;
    grpc::AddInsecureChannelFromFd(server, fd);
  }
}

}  // namespace kjit
