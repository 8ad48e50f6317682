#include "server/access/listener_credentials.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

namespace kjit {
namespace {

struct TlsFiles {
  std::string cert, key, client_ca;
};

Result<std::string> read_pem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::failed_precondition, std::string("cannot read the TLS ") + what + " " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A directory opens but reads nothing; an empty file is no certificate either.
  if (text.empty())
    return make_error(ErrorCode::failed_precondition, std::string("the TLS ") + what + " " + path + " is empty");
  return text;
}

bool wants_tls(const DaemonConfig& config) {
  return !config.tls.cert_file.empty() || !config.tls.key_file.empty();
}

// The files the listener needs, read; or why it may not listen at all.
Result<TlsFiles> read_tls_files(const DaemonConfig& config) {
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
    return TlsFiles{};
  }
  if (tls.cert_file.empty() || tls.key_file.empty())
    return make_error(ErrorCode::failed_precondition,
                      "TLS needs both a certificate and a key (--tls-cert and --tls-key)");
  TlsFiles files;
  Result<std::string> cert = read_pem(tls.cert_file, "certificate");
  if (!cert) return cert.error();
  files.cert = std::move(cert.value());
  Result<std::string> key = read_pem(tls.key_file, "key");
  if (!key) return key.error();
  files.key = std::move(key.value());
  if (!tls.client_ca_file.empty()) {
    Result<std::string> ca = read_pem(tls.client_ca_file, "client CA");
    if (!ca) return ca.error();
    files.client_ca = std::move(ca.value());
  }
  return files;
}

}  // namespace

Status check_tls_files(const DaemonConfig& config) {
  if (config.listen_address.empty()) return Ok{};
  Result<TlsFiles> files = read_tls_files(config);
  if (!files) return files.error();
  return Ok{};
}

Status add_tcp_listener(grpc::ServerBuilder& builder, const DaemonConfig& config, int* bound_port) {
  if (config.listen_address.empty()) return Ok{};
  Result<TlsFiles> files = read_tls_files(config);
  if (!files) return files.error();
  if (!wants_tls(config)) {
    spdlog::warn(
        "listening on {} in plaintext (insecure_listen): anyone who can reach this address can use the "
        "daemon and read what it answers",
        config.listen_address);
    builder.AddListeningPort(config.listen_address, grpc::InsecureServerCredentials(), bound_port);
    return Ok{};
  }
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({files->key, files->cert});
  if (!files->client_ca.empty()) {
    // Mutual TLS: a client without a certificate this CA signed never gets a call through.
    options.pem_root_certs = files->client_ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  builder.AddListeningPort(config.listen_address, grpc::SslServerCredentials(options), bound_port);
  spdlog::info("TCP listener on {}: TLS{}", config.listen_address,
               files->client_ca.empty() ? "" : ", client certificates required (" + config.tls.client_ca_file + ")");
  return Ok{};
}

}  // namespace kjit
