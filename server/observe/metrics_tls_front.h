// The metrics port over TLS (metrics_tls). Debian's civetweb 1.15, which
// prometheus-cpp serves with, is built for OpenSSL 1.1 and loads libssl at
// run time; under OpenSSL 3 it finds no SSL_get_peer_certificate and
// crashes on the first TLS connection. So kjitd makes the TLS connection
// itself, in front of civetweb: each connection is accepted here, its
// handshake made with the TCP listener's certificate and key (as they are
// at that moment, so a reload's certificate serves the next scrape), and
// its bytes passed to and from civetweb's plaintext port on loopback,
// which answers as it would without TLS, bearer token included.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kjit/status.h"

namespace kjit {

// A certificate chain and its private key, PEM.
struct MetricsCertificate {
  std::string cert, key;
};

class MetricsTlsFront {
 public:
  // Asked at each new connection; a null answer refuses the connection.
  using CertificateSource = std::function<std::shared_ptr<const MetricsCertificate>()>;

  // Listens on address:port (0: a free port) and passes each connection's
  // plaintext to 127.0.0.1:backend_port.
  static Result<std::unique_ptr<MetricsTlsFront>> start(const std::string& address, uint16_t port,
                                                        uint16_t backend_port, CertificateSource certificate);
  // Stops accepting, ends the connections open and waits for their threads.
  ~MetricsTlsFront();
  MetricsTlsFront(const MetricsTlsFront&) = delete;
  MetricsTlsFront& operator=(const MetricsTlsFront&) = delete;

  uint16_t port() const;

 private:
  struct State;
  explicit MetricsTlsFront(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kjit
