// Who a socket caller is: the registry of connections' credentials, and the
// operator decision and blob namespaces (LocalUserPolicy).
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/access/local_users.h"
#include "server/access/peer_credentials.h"

namespace kjit {
namespace {

constexpr uint32_t k_daemon_uid = 990;

std::shared_ptr<const LocalUserPolicy> policy(LocalUserPolicy::Options options = {}) {
  if (!options.daemon_uid) options.daemon_uid = k_daemon_uid;
  Result<std::shared_ptr<const LocalUserPolicy>> made = LocalUserPolicy::make(std::move(options));
  EXPECT_TRUE(made) << made.error().message;
  return made ? *made : nullptr;
}

// A group this host has, other than root's: the tests name groups by name.
std::optional<std::pair<std::string, uint32_t>> some_group() {
  for (const char* name : {"daemon", "bin", "sys", "adm", "users", "nogroup"})
    if (const group* g = ::getgrnam(name)) return std::make_pair(std::string(name), static_cast<uint32_t>(g->gr_gid));
  return std::nullopt;
}

TEST(PeerRegistry, FindsAConnectionByTheNameGrpcGivesIt) {
  PeerRegistry peers;
  auto user = std::make_shared<LocalUser>();
  user->credentials.uid = 1000;
  peers.record(7, user);
  EXPECT_EQ(PeerRegistry::peer_name(7), "fd:7");
  EXPECT_EQ(peers.find("fd:7"), user);
  for (const char* other : {"fd:8", "fd:", "fd:7x", "fd:-7", "unix:/run/kjit/kjitd.sock", "ipv4:127.0.0.1:5000", ""})
    EXPECT_EQ(peers.find(other), nullptr) << other;
}

TEST(PeerRegistry, ANewConnectionOnAReusedNumberReplacesTheOldEntry) {
  PeerRegistry peers;
  auto first = std::make_shared<LocalUser>();
  first->credentials.uid = 1000;
  auto second = std::make_shared<LocalUser>();
  second->credentials.uid = 1001;
  peers.record(9, first);
  peers.record(9, second);
  EXPECT_EQ(peers.find("fd:9"), second);
  EXPECT_EQ(peers.size(), 1u);
}

TEST(PeerCredentials, TheKernelNamesTheOtherEndOfASocketpair) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Result<PeerCredentials> credentials = read_peer_credentials(fds[0]);
  ASSERT_TRUE(credentials) << credentials.error().message;
  EXPECT_EQ(credentials->uid, ::geteuid());
  EXPECT_EQ(credentials->gid, ::getegid());
  EXPECT_EQ(credentials->pid, ::getpid());
  ::close(fds[0]);
  ::close(fds[1]);
  int not_a_socket[2];
  ASSERT_EQ(::pipe(not_a_socket), 0);
  EXPECT_FALSE(read_peer_credentials(not_a_socket[0]));
  ::close(not_a_socket[0]);
  ::close(not_a_socket[1]);
}

TEST(LocalUserPolicy, RootAndTheDaemonsUserAreOperatorsInTheDefaultNamespace) {
  auto p = policy();
  for (uint32_t uid : {0u, k_daemon_uid}) {
    auto user = p->decide({uid, 100, 42, {}});
    EXPECT_TRUE(user->is_operator) << uid;
    EXPECT_EQ(user->blob_ns, "") << uid;
  }
  auto other = p->decide({1000, 1000, 43, {}});
  EXPECT_FALSE(other->is_operator);
  EXPECT_EQ(other->blob_ns, "U1000");
  EXPECT_EQ(other->label, "uid:1000");
  EXPECT_EQ(other->log, "uid 1000 gid 1000 pid 43");
  EXPECT_NE(p->operators().find("kjitd's user (uid 990)"), std::string::npos) << p->operators();
}

TEST(LocalUserPolicy, TheAdminGroupCountsByPrimaryOrSupplementaryGroup) {
  auto group = some_group();
  if (!group) GTEST_SKIP() << "no well-known group on this host";
  auto p = policy({.admin_group = group->first});
  EXPECT_TRUE(p->decide({1000, group->second, 1, {}})->is_operator);
  EXPECT_TRUE(p->decide({1000, 1000, 1, {1000, group->second}})->is_operator);
  EXPECT_FALSE(p->decide({1000, 1000, 1, {1000}})->is_operator);
  EXPECT_NE(p->operators().find("a member of group " + group->first), std::string::npos) << p->operators();
}

TEST(LocalUserPolicy, UnknownGroupsStopTheStartNamingTheKey) {
  Result<std::shared_ptr<const LocalUserPolicy>> admin = LocalUserPolicy::make({.admin_group = "no-such-group-kjit"});
  ASSERT_FALSE(admin);
  EXPECT_NE(admin.error().message.find("admin_group: no group named 'no-such-group-kjit'"), std::string::npos);
  Result<std::shared_ptr<const LocalUserPolicy>> sharing =
      LocalUserPolicy::make({.blob_sharing = {BlobSharing{"no-such-group-kjit", {}, "team"}}});
  ASSERT_FALSE(sharing);
  EXPECT_NE(sharing.error().message.find("blob_sharing.group"), std::string::npos) << sharing.error().message;
}

TEST(LocalUserPolicy, DeclaredSharingByUidOrGroupFirstMatchWins) {
  auto group = some_group();
  if (!group) GTEST_SKIP() << "no well-known group on this host";
  auto p = policy({.blob_sharing = {BlobSharing{"", {1001, 1002}, "pair"}, BlobSharing{group->first, {}, "ml-team"},
                                    BlobSharing{"", {1001}, "never"}}});
  EXPECT_EQ(p->decide({1001, 1001, 1, {}})->blob_ns, "pair");
  EXPECT_EQ(p->decide({1003, 1003, 1, {1003, group->second}})->blob_ns, "ml-team");
  EXPECT_EQ(p->decide({1004, 1004, 1, {}})->blob_ns, "U1004");
  // Operators keep the default namespace whatever a sharing entry says.
  auto root_sharing = policy({.blob_sharing = {BlobSharing{"", {0}, "team"}}});
  EXPECT_EQ(root_sharing->decide({0, 0, 1, {}})->blob_ns, "");
}

TEST(LocalUserPolicy, MetricsNameABoundedNumberOfUids) {
  auto p = policy({.max_uid_labels = 2});
  EXPECT_EQ(p->decide({1000, 1, 1, {}})->label, "uid:1000");
  EXPECT_EQ(p->decide({1001, 1, 1, {}})->label, "uid:1001");
  EXPECT_EQ(p->decide({1002, 1, 1, {}})->label, "uid:other");
  EXPECT_EQ(p->decide({1000, 1, 2, {}})->label, "uid:1000");  // one already named stays named
}

}  // namespace
}  // namespace kjit
