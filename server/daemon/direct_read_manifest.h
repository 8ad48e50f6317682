// The direct-read manifest: a small JSON file the daemon writes beside its
// unix socket (<socket>.direct.json) while it serves, telling a client on
// the same host where the disk tier is and under which namespace a request
// on the socket without a token is served. A client that knows a blob's
// identity (Triton's cache manager) can then read the entry from the disk
// tier itself, verify it as the daemon would, and skip the RPC and the cost
// of loading an RPC stack, the way ccache's direct mode skips the compiler.
//
// What keeps a direct read from serving what the daemon would not:
// - the file exists only while a daemon serves on that socket with a disk
//   tier, and only when the socket serves callers without a token; it is
//   removed before the socket is bound and when the daemon stops, and names
//   the socket's inode and change time, so a reader can tell a leftover
//   from a crashed daemon (nothing listens) or another daemon's socket; a
//   reader also notices when the file changes under it (a daemon restarted
//   with other settings);
// - it is readable by whoever reaches the socket's directory and tells no
//   secret: the operator (kjitd's user, root) reads its blobs, in the
//   namespace it names, under their plain names, which only kjitd's user
//   may open; every other user reads only its own blobs, whose file names
//   take a key of its namespace (blob_file_names.h) that the daemon gives a
//   caller over the socket, where it knows who asks (GetDirectReadGrant),
//   for the names secret the manifest identifies;
// - it names the entry format and the blob key spelling it was written
//   for: a reader that implements others reads nothing;
// - a reader checks what the daemon checks on every read (header, format,
//   key, checksum, the blob's recorded identity) and goes to the daemon for
//   anything it did not find or could not verify.
// Direct reads are the reader's own: the daemon's stats do not count them.
#pragma once

#include <cstdint>
#include <string>

#include "kjit/status.h"

namespace kjit {

// Bumped when a field changes meaning; readers accept only the format they know.
// 2: readable by every user, with daemon_uid and names_key_id (format 1 was
// the operator's alone).
inline constexpr int k_direct_read_manifest_format = 2;

struct DirectReadManifest {
  std::string socket_path;
  std::string disk_root;   // the disk tier's directory for this entry format (<dir>/v<N>)
  std::string ns;          // the cache namespace of a tokenless request on the socket ("" = default)
  int64_t touch_interval_ms = 0;  // how stale an entry's mtime may be before a hit refreshes it
  uint32_t daemon_uid = 0;        // whose plain-named files these are: with root, the readers of ns
  std::string names_key_id;       // the names secret users' grants are for (empty: none)
};

// <socket_path>.direct.json
std::string direct_read_manifest_path(const std::string& socket_path);

// Writes the manifest atomically, naming the socket's current inode and
// change time (the socket must exist), mode 0644.
Status write_direct_read_manifest(const DirectReadManifest& manifest);

// Removes the manifest beside socket_path, if any.
void remove_direct_read_manifest(const std::string& socket_path);

}  // namespace kjit
