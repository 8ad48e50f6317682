// Which socket file a daemon bound (see socket_identity.h).
#include "server/daemon/socket_identity.h"

#include <sys/stat.h>
#include <unistd.h>

namespace kjit {

std::optional<SocketIdentity> socket_identity_of(const std::string& path) {
  struct stat found {};
  if (::lstat(path.c_str(), &found) != 0 || !S_ISSOCK(found.st_mode)) return std::nullopt;
  return SocketIdentity{found.st_dev, found.st_ino,
                        static_cast<int64_t>(found.st_ctim.tv_sec) * 1'000'000'000 + found.st_ctim.tv_nsec};
}

bool socket_still_at(const std::string& path, const SocketIdentity& identity) {
  const std::optional<SocketIdentity> now = socket_identity_of(path);
  return now && now->device == identity.device && now->inode == identity.inode &&
         now->change_time_ns == identity.change_time_ns;
}

bool remove_socket_if_still_at(const std::string& path, const SocketIdentity& identity) {
  return socket_still_at(path, identity) && ::unlink(path.c_str()) == 0;
}

}  // namespace kjit
