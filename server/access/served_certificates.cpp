#include "server/access/served_certificates.h"

#include <fcntl.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace kjit {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_current = "current";  // the symlink gRPC's paths go through

Error unusable(const std::string& what) {
  return make_error(ErrorCode::failed_precondition, what);
}

Result<std::string> read_pem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unusable(std::string("cannot read the TLS ") + what + " " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A directory opens but reads nothing; an empty file is no certificate either.
  if (text.empty()) return unusable(std::string("the TLS ") + what + " " + path + " is empty");
  return text;
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Certificate = std::unique_ptr<X509, X509Free>;

// A key protected by a passphrase has none given: OpenSSL must not ask for
// one on the terminal.
int no_passphrase(char*, int, int, void*) {
  return -1;
}

std::vector<Certificate> certificates_in(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<Certificate> out;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)) out.emplace_back(cert);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

Status write_private_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return unusable("cannot write " + path.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      return unusable("cannot write " + path.string() + ": " + std::strerror(saved));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Ok{};
}

}  // namespace

Result<TlsMaterial> read_tls_material(const TlsConfig& tls) {
  TlsMaterial material;
  Result<std::string> cert = read_pem(tls.cert_file, "certificate");
  if (!cert) return cert.error();
  material.cert = std::move(cert.value());
  Result<std::string> key = read_pem(tls.key_file, "key");
  if (!key) return key.error();
  material.key = std::move(key.value());
  if (!tls.client_ca_file.empty()) {
    Result<std::string> ca = read_pem(tls.client_ca_file, "client CA");
    if (!ca) return ca.error();
    material.client_ca = std::move(ca.value());
  }

  const std::vector<Certificate> chain = certificates_in(material.cert);
  if (chain.empty()) return unusable("the TLS certificate " + tls.cert_file + " holds no PEM certificate");
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new_mem_buf(material.key.data(), static_cast<int>(material.key.size())));
  std::unique_ptr<EVP_PKEY, KeyFree> private_key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr));
  ERR_clear_error();
  if (!private_key)
    return unusable("the TLS key " + tls.key_file + " holds no PEM private key (or one with a passphrase)");
  if (X509_check_private_key(chain.front().get(), private_key.get()) != 1) {
    ERR_clear_error();
    return unusable("the TLS key " + tls.key_file + " does not match the certificate " + tls.cert_file);
  }
  if (X509_cmp_current_time(X509_get0_notAfter(chain.front().get())) < 0)
    spdlog::warn("the TLS certificate {} has expired: clients will refuse it", tls.cert_file);
  if (!tls.client_ca_file.empty() && certificates_in(material.client_ca).empty())
    return unusable("the TLS client CA " + tls.client_ca_file + " holds no PEM certificate");
  return material;
}

Result<std::shared_ptr<ServedCertificates>> ServedCertificates::publish(const TlsMaterial& material,
                                                                        std::string directory) {
  std::error_code ec;
  // Left by a daemon that died on this socket (only one serves it).
  fs::remove_all(directory, ec);
  if (::mkdir(directory.c_str(), 0700) != 0)
    return unusable("cannot create " + directory + " for the TLS files: " + std::strerror(errno));
  std::shared_ptr<ServedCertificates> served(new ServedCertificates(std::move(directory), !material.client_ca.empty()));
  if (Status s = served->write_generation(material); !s) return s.error();
  return served;
}

ServedCertificates::~ServedCertificates() {
  std::error_code ec;
  fs::remove_all(directory_, ec);
}

Status ServedCertificates::replace(const TlsMaterial& material) {
  if (material.client_ca.empty() == mutual_)
    return unusable(mutual_ ? "the listener asks for client certificates since its start: a client CA stays "
                              "needed until kjitd restarts"
                            : "the listener asks for no client certificate since its start: a client CA "
                              "takes effect only when kjitd restarts");
  return write_generation(material);
}

Status ServedCertificates::write_generation(const TlsMaterial& material) {
  std::lock_guard lock(mutex_);
  const unsigned next = generation_ + 1;
  const fs::path dir = fs::path(directory_) / ("gen-" + std::to_string(next));
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0) return unusable("cannot create " + dir.string() + ": " + std::strerror(errno));
  Status written = write_private_file(dir / "cert.pem", material.cert);
  if (written) written = write_private_file(dir / "key.pem", material.key);
  if (written && mutual_) written = write_private_file(dir / "ca.pem", material.client_ca);
  const fs::path link = fs::path(directory_) / k_current;
  const fs::path staged = fs::path(directory_) / "current.new";
  fs::remove(staged, ec);
  if (written && ::symlink(dir.filename().c_str(), staged.c_str()) != 0)
    written = unusable("cannot link " + staged.string() + ": " + std::strerror(errno));
  // One rename: gRPC reads either every old file or every new one.
  if (written && ::rename(staged.c_str(), link.c_str()) != 0)
    written = unusable("cannot rename " + staged.string() + ": " + std::strerror(errno));
  if (!written) {
    fs::remove_all(dir, ec);
    return written;
  }
  // The previous generation stays: gRPC may be reading it now.
  if (generation_ >= 1) fs::remove_all(fs::path(directory_) / ("gen-" + std::to_string(generation_ - 1)), ec);
  generation_ = next;
  material_ = std::make_shared<const TlsMaterial>(material);
  return Ok{};
}

std::shared_ptr<grpc::ServerCredentials> ServedCertificates::server_credentials() const {
  const fs::path current = fs::path(directory_) / k_current;
  auto provider = mutual_ ? std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                                (current / "key.pem").string(), (current / "cert.pem").string(),
                                (current / "ca.pem").string(), k_refresh_seconds)
                          : std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                                (current / "key.pem").string(), (current / "cert.pem").string(), k_refresh_seconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (mutual_) {
    // A client without a certificate this CA signed never gets a call through.
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<const TlsMaterial> ServedCertificates::material() const {
  std::lock_guard lock(mutex_);
  return material_;
}

}  // namespace kjit
