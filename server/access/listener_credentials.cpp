#include "server/access/listener_credentials.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>

namespace kjit {
namespace {

bool wants_tls(const DaemonConfig& config) {
  return !config.tls.cert_file.empty() || !config.tls.key_file.empty();
}

// The files the listener needs, read and checked as a reload checks them;
// nullopt for plaintext; or why it may not listen at all.
Result<std::optional<TlsMaterial>> read_tls_files(const DaemonConfig& config) {
  const TlsConfig& tls = config.tls;
  if (!wants_tls(config)) {
    if (!tls.client_ca_file.empty())
      return make_error(ErrorCode::failed_precondition,
                        "a TLS client CA needs a certificate and key (--tls-cert/--tls-key)");
    if (!config.insecure_listen)
      return make_error(ErrorCode::failed_precondition,
                        "listening on " + config.listen_address +
                            " needs TLS (--tls-cert/--tls-key, or [tls] cert and key) or plaintext said explicitly "
                            "(--insecure-listen, or insecure_listen = true)");
    return std::optional<TlsMaterial>();
  }
  if (tls.cert_file.empty() || tls.key_file.empty())
    return make_error(ErrorCode::failed_precondition,
                      "TLS needs both a certificate and a key (--tls-cert and --tls-key)");
  Result<TlsMaterial> material = read_tls_material(tls);
  if (!material) return material.error();
  return std::optional<TlsMaterial>(std::move(material.value()));
}

}  // namespace

Status check_tls_files(const DaemonConfig& config) {
  if (config.listen_address.empty()) return Ok{};
  // The same reading as a start's: a check that passed files a start then
  // refuses (a key of another certificate, no certificate at all) would be
  // worth little before a restart.
  Result<std::optional<TlsMaterial>> files = read_tls_files(config);
  if (!files) return files.error();
  return Ok{};
}

Status add_tcp_listener(grpc::ServerBuilder& builder, const DaemonConfig& config, const std::string& tls_directory,
                        int* bound_port, std::shared_ptr<ServedCertificates>* served) {
  served->reset();
  if (config.listen_address.empty()) return Ok{};
  Result<std::optional<TlsMaterial>> files = read_tls_files(config);
  if (!files) return files.error();
  if (!files->has_value()) {
    spdlog::warn(
        "listening on {} in plaintext (insecure_listen): anyone who can reach this address can use the "
        "daemon and read what it answers",
        config.listen_address);
    builder.AddListeningPort(config.listen_address, grpc::InsecureServerCredentials(), bound_port);
    return Ok{};
  }
  Result<std::shared_ptr<ServedCertificates>> published = ServedCertificates::publish(**files, tls_directory);
  if (!published) return published.error();
  *served = std::move(published.value());
  builder.AddListeningPort(config.listen_address, (*served)->server_credentials(), bound_port);
  spdlog::info("TCP listener on {}: TLS{}", config.listen_address,
               (*served)->mutual() ? ", client certificates required (" + config.tls.client_ca_file + ")" : "");
  return Ok{};
}

}  // namespace kjit
