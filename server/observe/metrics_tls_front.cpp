#include "server/observe/metrics_tls_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

namespace kjit {
namespace {

// Scrapes are few; past this many connections at once a new one is closed.
constexpr size_t k_max_connections = 32;
// A connection that passes nothing either way for this long is closed.
constexpr int k_idle_ms = 60'000;
// A handshake or a write that makes no progress for this long gives up.
constexpr int k_io_timeout_s = 10;

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};

// A server context for one certificate chain and key; null when they do not
// load (the daemon checked them before serving them, so this is rare).
std::shared_ptr<SSL_CTX> make_context(const MetricsCertificate& pem) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SslCtxFree{});
  if (!ctx) return nullptr;
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  std::unique_ptr<BIO, BioFree> chain(BIO_new_mem_buf(pem.cert.data(), static_cast<int>(pem.cert.size())));
  X509* leaf = PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr);
  bool ok = leaf && SSL_CTX_use_certificate(ctx.get(), leaf) == 1;
  X509_free(leaf);
  while (ok) {
    X509* next = PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr);
    if (!next) break;
    if (SSL_CTX_add0_chain_cert(ctx.get(), next) != 1) {
      X509_free(next);
      ok = false;
    }
  }
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new_mem_buf(pem.key.data(), static_cast<int>(pem.key.size())));
  EVP_PKEY* key = ok ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr;
  ok = key && SSL_CTX_use_PrivateKey(ctx.get(), key) == 1 && SSL_CTX_check_private_key(ctx.get()) == 1;
  EVP_PKEY_free(key);
  ERR_clear_error();  // the chain's end reads as an error
  return ok ? ctx : nullptr;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One TLS connection to its end: the handshake, then bytes both ways
// between it and civetweb until either side closes or it sits idle.
void pass_through(int client, SSL_CTX* ctx, uint16_t backend_port) {
  timeval timeout{k_io_timeout_s, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  SSL* ssl = SSL_new(ctx);
  if (!ssl) return;
  SSL_set_fd(ssl, client);
  if (SSL_accept(ssl) != 1) {
    // A client that does not trust the certificate, or no TLS at all.
    spdlog::debug("metrics: a TLS handshake failed");
    ERR_clear_error();
    SSL_free(ssl);
    return;
  }
  const int backend = connect_loopback(backend_port);
  char buffer[16384];
  while (backend >= 0) {
    // Bytes OpenSSL has decrypted already are not in the socket for poll.
    if (SSL_pending(ssl) == 0) {
      pollfd fds[2] = {{client, POLLIN, 0}, {backend, POLLIN, 0}};
      const int ready = ::poll(fds, 2, k_idle_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) break;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::recv(backend, buffer, sizeof(buffer), 0);
        if (n <= 0 || SSL_write(ssl, buffer, static_cast<int>(n)) != n) break;
      }
      if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    }
    const int n = SSL_read(ssl, buffer, sizeof(buffer));
    if (n <= 0 || !write_all(backend, buffer, static_cast<size_t>(n))) break;
  }
  if (backend >= 0) ::close(backend);
  SSL_shutdown(ssl);
  ERR_clear_error();
  SSL_free(ssl);
}

// One connection's thread: the socket is ended here (the client sees the
// close at once) but closed by whoever joins the thread.
void serve_connection(int client, SSL_CTX* ctx, uint16_t backend_port) {
  pass_through(client, ctx, backend_port);
  ::shutdown(client, SHUT_RDWR);
}

}  // namespace

struct MetricsTlsFront::State {
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // written once to stop the accepting thread
  uint16_t port = 0;
  uint16_t backend_port = 0;
  CertificateSource certificate;
  std::thread acceptor;

  // The context of the certificate served last, reused while it stays.
  std::shared_ptr<const MetricsCertificate> served;
  std::shared_ptr<SSL_CTX> context;

  // Each connection's thread and its socket, closed only once the thread
  // is joined, so that stopping never shuts down a number reused since.
  struct Connection {
    int fd;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::mutex mutex;
  std::list<Connection> connections;

  std::shared_ptr<SSL_CTX> context_for_now() {
    std::shared_ptr<const MetricsCertificate> now = certificate ? certificate() : nullptr;
    if (!now) return nullptr;
    if (!served || served->cert != now->cert || served->key != now->key) {
      served = now;
      context = make_context(*now);
      if (!context) spdlog::error("metrics: the TLS certificate and key do not load; TLS connections are refused");
    }
    return context;
  }

  void reap_finished() {
    for (auto it = connections.begin(); it != connections.end();) {
      if (!it->done) {
        ++it;
        continue;
      }
      it->thread.join();
      ::close(it->fd);
      it = connections.erase(it);
    }
  }

  void accept_loop() {
    for (;;) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      if (!(fds[0].revents & POLLIN)) continue;
      const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      std::shared_ptr<SSL_CTX> ctx = context_for_now();
      std::lock_guard lock(mutex);
      reap_finished();
      if (!ctx || connections.size() >= k_max_connections) {
        ::close(client);
        continue;
      }
      Connection& connection = connections.emplace_back();
      connection.fd = client;
      connection.thread = std::thread([&connection, ctx, backend = backend_port] {
        serve_connection(connection.fd, ctx.get(), backend);
        connection.done = true;
      });
    }
  }

  ~State() {
    if (acceptor.joinable()) {
      const char stop = 1;
      [[maybe_unused]] ssize_t n = ::write(wake[1], &stop, 1);
      acceptor.join();
    }
    std::lock_guard lock(mutex);
    for (Connection& connection : connections) ::shutdown(connection.fd, SHUT_RDWR);
    for (Connection& connection : connections) {
      connection.thread.join();
      ::close(connection.fd);
    }
    for (int fd : {listen_fd, wake[0], wake[1]})
      if (fd >= 0) ::close(fd);
  }
};

MetricsTlsFront::MetricsTlsFront(std::unique_ptr<State> state) : state_(std::move(state)) {}
MetricsTlsFront::~MetricsTlsFront() = default;

uint16_t MetricsTlsFront::port() const {
  return state_->port;
}

Result<std::unique_ptr<MetricsTlsFront>> MetricsTlsFront::start(const std::string& address, uint16_t port,
                                                                uint16_t backend_port, CertificateSource certificate) {
  auto state = std::make_unique<State>();
  state->backend_port = backend_port;
  state->certificate = std::move(certificate);
  std::string host = address.starts_with('[') ? address.substr(1, address.size() - 2) : address;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = address + ":" + std::to_string(port);
  if (const int e = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found);
      e != 0)
    return make_error(ErrorCode::failed_precondition, "metrics: cannot resolve " + where + ": " + gai_strerror(e));
  state->listen_fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  const int one = 1;
  bool bound = state->listen_fd >= 0 &&
               ::setsockopt(state->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
               ::bind(state->listen_fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(state->listen_fd, 64) == 0;
  const int saved = errno;
  ::freeaddrinfo(found);
  if (!bound)
    return make_error(ErrorCode::failed_precondition,
                      "metrics: cannot listen on " + where + ": " + std::strerror(saved));
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  ::getsockname(state->listen_fd, reinterpret_cast<sockaddr*>(&local), &length);
  state->port = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  if (::pipe2(state->wake, O_CLOEXEC) != 0)
    return make_error(ErrorCode::internal, std::string("metrics: pipe: ") + std::strerror(errno));
  State* raw = state.get();
  state->acceptor = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<MetricsTlsFront>(new MetricsTlsFront(std::move(state)));
}

}  // namespace kjit
