// Who a caller on the unix socket is to kjitd, from the credentials the
// kernel gives for its connection (peer_credentials.h):
//
// - The operator: root, the daemon's own user, or a member of admin_group
//   (by its primary or a supplementary group). Only the operator removes
//   entries, collects or verifies the whole disk tier; its client blobs live
//   in the default namespace.
// - Everyone else: its client blobs live in a namespace of its own uid,
//   "U<uid>", unless a [[blob_sharing]] entry names it (by group or uid):
//   then in that entry's namespace, with the others it names. The first
//   matching entry decides. "U<uid>" has a capital letter, which no tenant's
//   or declared namespace may have, so none can name another user's.
// Compile entries are shared by everyone without a token: kjitd made them
// from the request, so they are the same whoever asked.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kjit/status.h"
#include "server/access/peer_credentials.h"
#include "server/config/daemon_config.h"

namespace kjit {

class LocalUserPolicy {
 public:
  struct Options {
    uint32_t daemon_uid = 0;
    std::string admin_group{};                // empty: none
    std::vector<BlobSharing> blob_sharing{};  // [[blob_sharing]]
    size_t max_uid_labels = 32;             // distinct uids named in metrics; the rest are "uid:other"
  };
  // Group names are resolved now: FAILED_PRECONDITION naming one this host
  // does not know.
  static Result<std::shared_ptr<const LocalUserPolicy>> make(Options options);

  // What a connection of these credentials is (at accept time: reading the
  // group database is too slow for every call).
  std::shared_ptr<const LocalUser> decide(const PeerCredentials& credentials) const;

  // "root, kjitd's user (uid 998) or a member of group kjit-admin", for refusals.
  const std::string& operators() const { return operators_; }

 private:
  struct Sharing {
    std::optional<uint32_t> gid;
    std::set<uint32_t> uids;
    std::string ns;
  };
  explicit LocalUserPolicy(Options options) : options_(std::move(options)) {}
  bool in_group(const PeerCredentials& credentials, uint32_t gid) const;
  std::string label_for(uint32_t uid) const;

  Options options_;
  std::optional<uint32_t> admin_gid_;
  std::vector<Sharing> sharing_;
  std::string operators_;
  mutable std::mutex labels_mutex_;
  mutable std::set<uint32_t> labelled_;
};

// The blob namespace of a user of its own.
std::string user_blob_namespace(uint32_t uid);

}  // namespace kjit
