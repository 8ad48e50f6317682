// The TCP listener's TLS files as gRPC serves them, replaceable while kjitd
// serves. gRPC's FileWatcherCertificateProvider reads the files it watches
// again every second and gives each new handshake what it read last;
// connections already open keep the keys they agreed on. It watches copies
// in a private directory, never the operator's files: a copy is made only
// of a certificate, key and client CA that parse and belong together, and
// all three are swapped at once by renaming a symlink to their directory
// (the update gRPC's watcher documents as atomic), so gRPC never reads a
// pair copied halfway, and files that do not check out leave the old ones
// in force.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "kjit/status.h"
#include "server/config/daemon_config.h"

namespace grpc {
class ServerCredentials;
}

namespace kjit {

// A certificate chain, its key and a client CA (empty: none), as PEM text.
struct TlsMaterial {
  std::string cert, key, client_ca;
};

// The files `tls` names, read and checked: a certificate chain, a private
// key that matches its first certificate, a client CA that holds a
// certificate. FAILED_PRECONDITION naming the file (both, for a key that
// is not the certificate's) and what is wrong. A start, a reload and
// `kjitd --check-config` all check with this one function.
Result<TlsMaterial> read_tls_material(const TlsConfig& tls);

class ServedCertificates {
 public:
  // gRPC's watcher reads its files again this often.
  static constexpr unsigned k_refresh_seconds = 1;

  // Copies `material` into `directory` (made afresh, mode 0700; whatever
  // was there is removed first) and makes the credentials that watch it.
  static Result<std::shared_ptr<ServedCertificates>> publish(const TlsMaterial& material, std::string directory);
  ~ServedCertificates();  // removes the directory
  ServedCertificates(const ServedCertificates&) = delete;
  ServedCertificates& operator=(const ServedCertificates&) = delete;

  // New handshakes get `material` within k_refresh_seconds. Mutual TLS
  // cannot be turned on or off here (the listener asks for client
  // certificates or not from its start): FAILED_PRECONDITION, and so for a
  // copy that cannot be written; the old files stay in force either way.
  Status replace(const TlsMaterial& material);

  // TLS server credentials over the watched copies; client certificates
  // required and checked against the client CA when there is one.
  std::shared_ptr<grpc::ServerCredentials> server_credentials() const;
  std::shared_ptr<const TlsMaterial> material() const;  // the files in force
  bool mutual() const { return mutual_; }

 private:
  ServedCertificates(std::string directory, bool mutual) : directory_(std::move(directory)), mutual_(mutual) {}
  Status write_generation(const TlsMaterial& material);

  const std::string directory_;
  const bool mutual_;
  mutable std::mutex mutex_;
  unsigned generation_ = 0;
  std::shared_ptr<const TlsMaterial> material_;
};

}  // namespace kjit
