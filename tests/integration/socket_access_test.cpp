// Who may connect to kjitd's unix socket: its user and its group (mode
// 0660), the group being the daemon's own or the one socket_group names.
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/child_process.h"
#include "support/daemon_test.h"

namespace kjit::test {
namespace {

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(SocketAccess, TheSocketIsOpenToTheDaemonsUserAndGroupOnly) {
  TestDaemon daemon;
  struct stat st = stat_of(daemon.socket_path());
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, ::getegid());
}

TEST(SocketAccess, SocketGroupGivesTheSocketToThatGroup) {
  // A group other than ours where the host has one; root may give files to
  // any group, another user only to its own.
  gid_t gid = ::getegid();
  std::string name;
  if (::geteuid() == 0) {
    if (const group* g = ::getgrnam("daemon")) gid = g->gr_gid;
  }
  const group* g = ::getgrgid(gid);
  ASSERT_NE(g, nullptr);
  name = g->gr_name;
  TestDaemon daemon({"--socket-group", name});
  struct stat st = stat_of(daemon.socket_path());
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, gid) << name;
  // The direct-read manifest is readable by the socket's group (and all):
  // it holds no secret, and each user reads only the blobs its grant names.
  struct stat manifest = stat_of(daemon.socket_path() + ".direct.json");
  EXPECT_EQ(manifest.st_mode & 0777, 0644u);
  EXPECT_EQ(manifest.st_uid, ::geteuid());
}

TEST(SocketAccess, AnUnknownSocketGroupStopsTheStartNamingIt) {
  CommandResult r = run_command({kjitd_path(), "--socket", "/tmp/kjit-socket-group-test.sock", "--socket-group",
                                 "no-such-group-kjit", "--no-cache"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no group named 'no-such-group-kjit'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kjit::test
