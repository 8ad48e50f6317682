#include "server/compile/blob_file_names.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/fd_io.h"
#include "core/hex.h"

namespace kjit {
namespace {

constexpr std::string_view k_secret_file = "/blob-names.key";
// Domain separation: the secret keys nothing but these derivations.
constexpr std::string_view k_namespace_domain = "kjit blob names v1 namespace";
constexpr std::string_view k_id_domain = "kjit blob names v1 id";

NamesKey hmac(const uint8_t* key, size_t key_size, std::string_view domain, std::string_view message) {
  std::string input(domain);
  input.push_back('\0');
  input.append(message);
  NamesKey out{};
  unsigned size = 0;
  HMAC(EVP_sha256(), key, static_cast<int>(key_size), reinterpret_cast<const unsigned char*>(input.data()),
       input.size(), out.data(), &size);
  return out;
}

Result<NamesKey> read_secret(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return make_error(errno == ENOENT ? ErrorCode::not_found : ErrorCode::failed_precondition,
                                "cannot open " + path + ": " + std::strerror(errno));
  // One byte more than a secret: a longer file is not one.
  char bytes[sizeof(NamesKey) + 1];
  ssize_t got = 0, n = 0;
  while ((n = ::read(fd, bytes + got, sizeof(bytes) - static_cast<size_t>(got))) > 0 ||
         (n < 0 && errno == EINTR))
    got += n > 0 ? n : 0;
  ::close(fd);
  if (n < 0 || got != static_cast<ssize_t>(sizeof(NamesKey)))
    return make_error(ErrorCode::failed_precondition,
                      path + " is not a blob names secret (" + std::to_string(sizeof(NamesKey)) +
                          " bytes); remove it to make a new one (users' blobs on disk are then lost)");
  NamesKey key{};
  std::memcpy(key.data(), bytes, key.size());
  return key;
}

}  // namespace

Result<BlobNameSecret> BlobNameSecret::load_or_create(const std::string& directory) {
  const std::string path = directory + std::string(k_secret_file);
  if (Result<NamesKey> existing = read_secret(path); existing) return BlobNameSecret(*existing);
  else if (existing.error().code != ErrorCode::not_found) return existing.error();

  NamesKey secret{};
  if (RAND_bytes(secret.data(), static_cast<int>(secret.size())) != 1)
    return make_error(ErrorCode::internal, "no random bytes for the blob names secret");
  // Written whole under a temp name, then linked into place: link never
  // replaces, so of two daemons making it at once, both end up with the
  // first's.
  std::string temp = directory + "/.blob-names.key.XXXXXX";
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);  // mode 0600
  if (fd < 0) return make_error(ErrorCode::failed_precondition, "cannot create " + temp + ": " + std::strerror(errno));
  const bool written = write_all(fd, std::string_view(reinterpret_cast<const char*>(secret.data()), secret.size())) == 0 &&
                       ::fsync(fd) == 0;
  ::close(fd);
  const int linked = written ? ::link(temp.c_str(), path.c_str()) : -1;
  const int saved = errno;
  ::unlink(temp.c_str());
  if (!written) return make_error(ErrorCode::failed_precondition, "cannot write " + temp);
  if (linked != 0 && saved != EEXIST)
    return make_error(ErrorCode::failed_precondition, "cannot create " + path + ": " + std::strerror(saved));
  Result<NamesKey> kept = read_secret(path);
  if (!kept) return kept.error();
  return BlobNameSecret(*kept);
}

NamesKey BlobNameSecret::key_for(std::string_view ns) const {
  return hmac(secret_.data(), secret_.size(), k_namespace_domain, ns);
}

std::string BlobNameSecret::id() const {
  const NamesKey id = hmac(secret_.data(), secret_.size(), k_id_domain, {});
  return hex_lower(id.data(), 16);
}

std::string blob_file_tag(const NamesKey& names_key, std::string_view cache_key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  HMAC(EVP_sha256(), names_key.data(), static_cast<int>(names_key.size()),
       reinterpret_cast<const unsigned char*>(cache_key.data()), cache_key.size(), digest, &size);
  return hex_lower(digest, 16);
}

}  // namespace kjit
