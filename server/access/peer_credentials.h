// Who is at the other end of a unix socket connection, as the kernel says
// (SO_PEERCRED, SO_PEERGROUPS), and the registry that lets a call find what
// was read for its connection.
//
// gRPC 1.51 does not tell a handler the peer's credentials on a unix socket
// (ServerContext::peer() is "unix:<path>"), so kjitd accepts connections on
// its socket itself, reads the credentials of each accepted fd, records them
// here under the name gRPC gives a connection it is handed by fd
// (grpc::AddInsecureChannelFromFd): "fd:<N>", and then hands the fd over.
//
// Why a call never finds another connection's entry although fd numbers are
// reused: gRPC closes a connection's fd only when its transport is
// destroyed, and every call (stream) holds a reference to its transport
// until the call is destroyed, which is after its handler has returned. So
// while a handler runs, its connection's fd is open and its number names no
// other connection. A number is reused only once every call of the old
// connection is gone, and the acceptor replaces the number's entry before
// it hands the new connection to gRPC, so no call of the new connection
// finds the old entry either. (tests/unit/server/daemon/socket_acceptor_test.cpp
// keeps a handler running past its client's disconnect and checks that new
// connections never get its number.) A check of IsCancelled() after the
// lookup would rest on the weaker claim that the transport cancels calls
// before it closes the fd; it is not needed, and none is made.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kjit/status.h"

namespace kjit {

struct PeerCredentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  // Supplementary groups the peer held when it connected (SO_PEERGROUPS);
  // where the kernel lacks that, the user's groups in the group database.
  std::vector<uint32_t> groups;
};

// The credentials of the process that connected fd (a unix stream socket).
Result<PeerCredentials> read_peer_credentials(int fd);

// A socket caller as the daemon decided at accept time (LocalUserPolicy).
struct LocalUser {
  PeerCredentials credentials;
  bool is_operator = false;
  std::string blob_ns;  // where its client blobs live; "" (the default namespace) for operators
  // blob_ns is a [[blob_sharing]] entry's, written by the other users it names too.
  bool shares_blobs = false;
  std::string label;    // for metrics: "uid:<uid>", or "uid:other" past a bound of distinct uids
  std::string log;      // for the log: "uid 1000 gid 1000 pid 4242"
};

class PeerRegistry {
 public:
  // How gRPC names a connection handed to it by fd.
  static std::string peer_name(int fd);

  // The connection on fd is user's; replaces what was recorded for an
  // earlier connection on the same number (see above).
  void record(int fd, std::shared_ptr<const LocalUser> user);
  // The user of the connection gRPC names peer; null for a peer not handed
  // over by fd (TCP, an in-process listener) or never recorded.
  std::shared_ptr<const LocalUser> find(std::string_view peer) const;
  size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<int, std::shared_ptr<const LocalUser>> by_fd_;
};

}  // namespace kjit
