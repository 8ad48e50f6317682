#include "server/access/peer_credentials.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>

namespace kjit {
namespace {

constexpr std::string_view k_fd_peer = "fd:";

// The user's groups from the group database, for kernels without
// SO_PEERGROUPS (before Linux 4.13).
std::vector<uint32_t> database_groups(uint32_t uid, uint32_t gid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || !found) return {gid};
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  if (::getgrouplist(found->pw_name, gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    if (::getgrouplist(found->pw_name, gid, groups.data(), &count) < 0) return {gid};
  }
  return std::vector<uint32_t>(groups.begin(), groups.begin() + count);
}

}  // namespace

Result<PeerCredentials> read_peer_credentials(int fd) {
  ucred cred{};
  socklen_t size = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0 || size != sizeof(cred))
    return make_error(ErrorCode::internal, std::string("cannot read the peer's credentials (SO_PEERCRED): ") +
                                               std::strerror(errno));
  PeerCredentials out{cred.uid, cred.gid, cred.pid, {}};
  std::vector<gid_t> groups(64);
  socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  int rc = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes);
  if (rc != 0 && errno == ERANGE) {  // bytes now says how many there are
    groups.resize(bytes / sizeof(gid_t));
    rc = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes);
  }
  if (rc == 0) {
    out.groups.assign(groups.begin(), groups.begin() + bytes / sizeof(gid_t));
  } else if (errno == ENOPROTOOPT) {
    out.groups = database_groups(out.uid, out.gid);
  } else {
    return make_error(ErrorCode::internal, std::string("cannot read the peer's groups (SO_PEERGROUPS): ") +
                                               std::strerror(errno));
  }
  return out;
}

std::string PeerRegistry::peer_name(int fd) { return std::string(k_fd_peer) + std::to_string(fd); }

void PeerRegistry::record(int fd, std::shared_ptr<const LocalUser> user) {
  std::unique_lock lock(mutex_);
  by_fd_[fd] = std::move(user);
}

std::shared_ptr<const LocalUser> PeerRegistry::find(std::string_view peer) const {
  if (!peer.starts_with(k_fd_peer)) return nullptr;
  peer.remove_prefix(k_fd_peer.size());
  int fd = -1;
  const auto [end, error] = std::from_chars(peer.data(), peer.data() + peer.size(), fd);
  if (error != std::errc{} || end != peer.data() + peer.size()) return nullptr;
  std::shared_lock lock(mutex_);
  auto found = by_fd_.find(fd);
  return found == by_fd_.end() ? nullptr : found->second;
}

size_t PeerRegistry::size() const {
  std::shared_lock lock(mutex_);
  return by_fd_.size();
}

}  // namespace kjit
