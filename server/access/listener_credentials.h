// kjitd's TCP listener: TLS from PEM files (mutual TLS when a client CA is
// given), replaceable by a reload, or plaintext only when the configuration
// says so explicitly.
#pragma once

#include <memory>
#include <string>

#include "kjit/status.h"
#include "server/access/served_certificates.h"
#include "server/config/daemon_config.h"

namespace grpc {
class ServerBuilder;
}

namespace kjit {

// Adds config.listen_address to builder with the credentials the
// configuration asks for; nothing when no address is configured.
// FAILED_PRECONDITION (naming the file or the missing flag) when the TLS
// files cannot be read or do not belong together, or when plaintext is not
// explicitly allowed. *bound_port receives the port once the server
// starts; *served the TLS files as the listener serves them, copied into
// `tls_directory` (served_certificates.h), which a reload replaces; null
// in plaintext.
Status add_tcp_listener(grpc::ServerBuilder& builder, const DaemonConfig& config, const std::string& tls_directory,
                        int* bound_port, std::shared_ptr<ServedCertificates>* served);

// What add_tcp_listener would refuse, without adding anything: for
// `kjitd --check-config`. The TLS files are read and checked as at a start
// or a reload (read_tls_material): the certificate parses and the key is
// its own.
Status check_tls_files(const DaemonConfig& config);

}  // namespace kjit
