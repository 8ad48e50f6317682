// How the kjit CLI reaches kjitd: its unix socket, or a TCP address with TLS
// and a tenant's token. Flags (before or after the subcommand) win over the
// environment: --address, then --socket, then KJIT_ADDRESS, then
// KJIT_SOCKET, then the daemon's default socket; --token-file, then
// KJIT_TOKEN. Header-only, so every command's file can use it.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "kjit/client.h"
#include "kjit/socket_path.h"

namespace kjit::cli {

// What the flags said; empty: not given.
struct ConnectionFlags {
  std::string socket, address, tls_ca, tls_cert, tls_key, token_file;
};

// Where and how every call of the command goes, settled once.
struct Connection {
  std::string target;     // a socket path or HOST:PORT, as messages name it
  ClientOptions options;  // TLS files and token; the default timeout

  Client client(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
    ClientOptions with = options;
    if (timeout) with.timeout = *timeout;
    return Client(target, std::move(with));
  }
};

// The connection options, on the program and on each subcommand, so that
// they may come before or after it.
// `group` is their heading in --help.
inline void add_connection_options(CLI::App& app, ConnectionFlags& flags, const std::string& group = "Options") {
  app.add_option("--socket,-s", flags.socket, "kjitd's unix socket (default: $KJIT_SOCKET, then the daemon's default)")
      ->group(group);
  app.add_option("--address", flags.address, "kjitd's TCP HOST:PORT instead of the socket (default: $KJIT_ADDRESS)")
      ->group(group);
  app.add_option("--tls-ca", flags.tls_ca, "PEM CA that signed kjitd's certificate: TLS to --address")->group(group);
  app.add_option("--tls-cert", flags.tls_cert, "PEM client certificate, for a daemon that asks for one")->group(group);
  app.add_option("--tls-key", flags.tls_key, "PEM key of --tls-cert")->group(group);
  app.add_option("--token-file", flags.token_file, "file holding the tenant's token (default: $KJIT_TOKEN)")
      ->group(group);
}

// The connection the flags and the environment describe; invalid_argument
// (a usage error) for a token file that is unreadable or empty, or TLS
// files half given.
inline Result<Connection> resolve_connection(const ConnectionFlags& flags) {
  Connection connection;
  const char* env_address = std::getenv("KJIT_ADDRESS");
  if (!flags.address.empty())
    connection.target = flags.address;
  else if (!flags.socket.empty())
    connection.target = resolve_socket_path(flags.socket);
  else if (env_address && *env_address)
    connection.target = env_address;
  else
    connection.target = resolve_socket_path("");
  if (flags.tls_cert.empty() != flags.tls_key.empty())
    return make_error(ErrorCode::invalid_argument, "--tls-cert and --tls-key go together");
  if (!flags.tls_cert.empty() && flags.tls_ca.empty())
    return make_error(ErrorCode::invalid_argument, "--tls-cert needs --tls-ca (a client certificate is sent over TLS)");
  for (const std::string* file : {&flags.tls_ca, &flags.tls_cert, &flags.tls_key})
    if (!file->empty() && !std::ifstream(*file))
      return make_error(ErrorCode::invalid_argument, "cannot read the TLS file " + *file);
  connection.options.tls_ca_file = flags.tls_ca;
  connection.options.tls_cert_file = flags.tls_cert;
  connection.options.tls_key_file = flags.tls_key;
  std::string token;
  if (!flags.token_file.empty()) {
    std::ifstream in(flags.token_file, std::ios::binary);
    if (!in) return make_error(ErrorCode::invalid_argument, "--token-file " + flags.token_file + " cannot be read");
    token.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad())
      return make_error(ErrorCode::invalid_argument, "--token-file " + flags.token_file + " cannot be read");
  } else if (const char* env_token = std::getenv("KJIT_TOKEN")) {
    token = env_token;
  }
  // Files end with a newline, and editors add more; a token has no spaces.
  constexpr const char* k_space = " \t\r\n\v\f";
  size_t first = token.find_first_not_of(k_space);
  token = first == std::string::npos ? std::string() : token.substr(first, token.find_last_not_of(k_space) - first + 1);
  if (!flags.token_file.empty() && token.empty())
    return make_error(ErrorCode::invalid_argument, "--token-file " + flags.token_file + " holds no token");
  connection.options.token = std::move(token);
  return connection;
}

}  // namespace kjit::cli
