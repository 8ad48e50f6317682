// Names of the files of blobs that belong to a user on the daemon's host.
//
// A user's blobs (a namespace of its own, or one it shares by declaration)
// may be read straight from the disk tier by that user's processes, without
// an RPC, but never by another user's. The tier's directories let everyone
// pass and no one but kjitd's user list them (0711), so a file can only be
// opened by one who can name it. The files of such a namespace are named
// with a tag: an HMAC-SHA256 of the blob's cache key under a key of that
// namespace's own, derived from a secret kept beside the disk tier, readable
// by kjitd's user alone. A caller learns its own namespace's key (the
// GetDirectReadGrant RPC, answered from its peer credentials) and no other;
// those files alone are readable by others (0644), everything else the
// daemon stores on disk stays private to its user (0600), save shared
// compile entries.
//
// The secret lives as long as the disk tier's directory: every daemon that
// shares the directory uses the same one, and a restart names the same
// files. Daemons on other hosts, with other secrets, store a user's blobs
// under other names (a uid means another person on another host).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

// 32 bytes: an HMAC-SHA256 key.
using NamesKey = std::array<uint8_t, 32>;

class BlobNameSecret {
 public:
  // Reads <directory>/blob-names.key, or makes it (32 random bytes, mode
  // 0600) when missing; two daemons making it at once agree on one.
  static Result<BlobNameSecret> load_or_create(const std::string& directory);
  // From given bytes (tests).
  explicit BlobNameSecret(const NamesKey& secret) : secret_(secret) {}

  // The key that names the files of namespace ns.
  NamesKey key_for(std::string_view ns) const;
  // Which secret this is, shown to readers (never the secret itself): 32 hex digits.
  std::string id() const;

 private:
  NamesKey secret_;
};

// The tag of a cache key's file under a namespace's names key: 32 hex digits
// (128 bits of HMAC-SHA256), which no one without the key can produce.
std::string blob_file_tag(const NamesKey& names_key, std::string_view cache_key);

}  // namespace kjit
