// Connections to a kjitd TCP listener with TLS as a test sees them: each a
// connection of its own (never one another channel opened before), and the
// certificate the daemon presents on it, for tests and benchmarks that
// replace that certificate while the daemon serves.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace grpc {
class Channel;
}

namespace kjit::test {

// A channel that makes its own connection and TLS handshake with `address`,
// trusting the CA whose PEM text is ca_pem.
std::shared_ptr<grpc::Channel> fresh_tls_channel(const std::string& address, const std::string& ca_pem);

// Whether an Echo on the channel succeeds within `timeout`; the common
// name of the certificate the daemon presented on it ("" when the call failed).
struct EchoOutcome {
  bool ok = false;
  std::string error;        // the call's code and message when it failed
  std::string common_name;  // x509_common_name of the daemon's certificate
};
EchoOutcome echo_on(const std::shared_ptr<grpc::Channel>& channel, std::chrono::milliseconds timeout);

}  // namespace kjit::test
