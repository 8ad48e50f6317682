// The direct-read manifest (see direct_read_manifest.h).
#include "server/daemon/direct_read_manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cache/atomic_file.h"
#include "cache/cache_entry.h"
#include "cache/disk_store.h"
#include "server/compile/blob_store.h"

namespace kjit {

std::string direct_read_manifest_path(const std::string& socket_path) { return socket_path + ".direct.json"; }

namespace {

// The manifest's JSON, naming the socket by `socket_stat`.
std::string manifest_json(const DirectReadManifest& manifest, const struct stat& socket_stat) {
  nlohmann::json json = {
      {"format", k_direct_read_manifest_format},
      {"socket", manifest.socket_path},
      {"socket_device", static_cast<uint64_t>(socket_stat.st_dev)},
      {"socket_inode", static_cast<uint64_t>(socket_stat.st_ino)},
      // An inode is reused as soon as it is freed; with the change time (set
      // when the socket was bound, chmod-ed and chown-ed, before this file)
      // another daemon's socket at the same path is told apart.
      {"socket_ctime_ns",
       static_cast<int64_t>(socket_stat.st_ctim.tv_sec) * 1'000'000'000 + socket_stat.st_ctim.tv_nsec},
      {"kjitd_pid", static_cast<int64_t>(::getpid())},
      {"disk_root", manifest.disk_root},
      {"entry_format", k_entry_format_version},
      {"entry_suffix", std::string(k_disk_entry_suffix)},
      {"blob_key_domain", std::string(k_blob_key_domain)},
      {"namespace", manifest.ns},
      {"touch_interval_ms", manifest.touch_interval_ms},
      {"daemon_uid", manifest.daemon_uid},
      {"names_key_id", manifest.names_key_id},
  };
  return json.dump(2) + "\n";
}

}  // namespace

Status write_direct_read_manifest(const DirectReadManifest& manifest) {
  struct stat socket_stat {};
  if (::stat(manifest.socket_path.c_str(), &socket_stat) != 0)
    return make_error(ErrorCode::internal, "cannot stat " + manifest.socket_path + ": " + std::strerror(errno));
  // Not synced: the file describes a running daemon, and a crash makes it stale anyway.
  const std::string path = direct_read_manifest_path(manifest.socket_path);
  // Readable by all: it holds no secret, and other users learn from it
  // where to read the blobs they can name (see the header).
  return write_file_atomically(path, manifest_json(manifest, socket_stat),
                               AtomicWriteOptions{.sync = false, .mode = 0644});
}

void remove_direct_read_manifest(const std::string& socket_path) {
  std::error_code ec;
  std::filesystem::remove(direct_read_manifest_path(socket_path), ec);
}

}  // namespace kjit
