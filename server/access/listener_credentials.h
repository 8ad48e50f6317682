// kjitd's TCP listener: TLS from PEM files (mutual TLS when a client CA is
// given), or plaintext only when the configuration says so explicitly.
#pragma once

#include "kjit/status.h"
#include "server/config/daemon_config.h"

namespace grpc {
class ServerBuilder;
}

namespace kjit {

// Adds config.listen_address to builder with the credentials the
// configuration asks for; nothing when no address is configured.
// FAILED_PRECONDITION (naming the file or the missing flag) when the TLS
// files cannot be read, or when plaintext is not explicitly allowed.
// *bound_port receives the port once the server starts.
Status add_tcp_listener(grpc::ServerBuilder& builder, const DaemonConfig& config, int* bound_port);

// What add_tcp_listener would refuse, without adding anything: for
// `kjitd --check-config`.
Status check_tls_files(const DaemonConfig& config);

}  // namespace kjit
