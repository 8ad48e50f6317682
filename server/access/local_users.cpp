#include "server/access/local_users.h"

#include <grp.h>

#include <algorithm>

namespace kjit {
namespace {

Result<uint32_t> group_id(const std::string& name, std::string_view key) {
  std::vector<char> buffer(16384);
  group entry{};
  group* found = nullptr;
  if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found)
    return make_error(ErrorCode::failed_precondition,
                      std::string(key) + ": no group named '" + name + "' on this host");
  return static_cast<uint32_t>(found->gr_gid);
}

}  // namespace

std::string user_blob_namespace(uint32_t uid) { return "U" + std::to_string(uid); }

Result<std::shared_ptr<const LocalUserPolicy>> LocalUserPolicy::make(Options options) {
  std::shared_ptr<LocalUserPolicy> policy(new LocalUserPolicy(std::move(options)));
  const Options& o = policy->options_;
  policy->operators_ = "root, kjitd's user (uid " + std::to_string(o.daemon_uid) + ")";
  if (!o.admin_group.empty()) {
    Result<uint32_t> gid = group_id(o.admin_group, "admin_group");
    if (!gid) return gid.error();
    policy->admin_gid_ = *gid;
    policy->operators_ += " or a member of group " + o.admin_group;
  }
  for (const BlobSharing& entry : o.blob_sharing) {
    Sharing sharing{{}, std::set<uint32_t>(entry.uids.begin(), entry.uids.end()), entry.ns};
    if (!entry.group.empty()) {
      Result<uint32_t> gid = group_id(entry.group, "blob_sharing.group");
      if (!gid) return gid.error();
      sharing.gid = *gid;
    }
    policy->sharing_.push_back(std::move(sharing));
  }
  return std::shared_ptr<const LocalUserPolicy>(std::move(policy));
}

bool LocalUserPolicy::in_group(const PeerCredentials& credentials, uint32_t gid) const {
  return credentials.gid == gid ||
         std::find(credentials.groups.begin(), credentials.groups.end(), gid) != credentials.groups.end();
}

std::string LocalUserPolicy::label_for(uint32_t uid) const {
  std::lock_guard lock(labels_mutex_);
  if (labelled_.contains(uid) || labelled_.size() < options_.max_uid_labels) {
    labelled_.insert(uid);
    return "uid:" + std::to_string(uid);
  }
  return "uid:other";
}

std::shared_ptr<const LocalUser> LocalUserPolicy::decide(const PeerCredentials& credentials) const {
  auto user = std::make_shared<LocalUser>();
  user->credentials = credentials;
  user->is_operator = credentials.uid == 0 || credentials.uid == options_.daemon_uid ||
                      (admin_gid_ && in_group(credentials, *admin_gid_));
  if (!user->is_operator) {
    user->blob_ns = user_blob_namespace(credentials.uid);
    for (const Sharing& sharing : sharing_) {
      if (sharing.uids.contains(credentials.uid) || (sharing.gid && in_group(credentials, *sharing.gid))) {
        user->blob_ns = sharing.ns;
        user->shares_blobs = true;
        break;
      }
    }
  }
  user->label = label_for(credentials.uid);
  user->log = "uid " + std::to_string(credentials.uid) + " gid " + std::to_string(credentials.gid) + " pid " +
              std::to_string(credentials.pid);
  return user;
}

}  // namespace kjit
