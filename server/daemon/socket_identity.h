// Which socket file a daemon bound: its device, inode and change time, taken
// once it is in place. A daemon that stops removes its socket path only
// while the path is still that socket, never one another daemon has bound
// there since (after this one was taken for dead, say).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace kjit {

struct SocketIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  // An inode number is reused as soon as it is freed (a socket someone
  // unlinked is freed when its daemon closes it, before that daemon looks
  // at its path): the change time, set when the socket was bound, moved
  // into place and given its mode, tells a later socket with the same
  // number apart.
  int64_t change_time_ns = 0;
};

// The socket at `path` (lstat: a symbolic link is no socket); nullopt when
// nothing is there or it is not a socket.
std::optional<SocketIdentity> socket_identity_of(const std::string& path);

// Whether `path` is now the socket `identity` names.
bool socket_still_at(const std::string& path, const SocketIdentity& identity);

// Unlinks `path` if it is still the socket `identity` names; true when it
// did. Between the look and the unlink another daemon could still rename
// its socket onto the path: a window of two system calls, which only a
// daemon that starts while this one stops can hit.
bool remove_socket_if_still_at(const std::string& path, const SocketIdentity& identity);

}  // namespace kjit
