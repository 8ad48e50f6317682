// Which directories of the temporary root a starting daemon removes: those
// of kjit's names whose owner is gone (dead, or its pid reused by a process
// of another start), never those of a live owner, another user or another
// pid namespace, nor anything that is not a directory of kjit's names.
#include "server/daemon/leftover_directories.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kjit {
namespace {

namespace fs = std::filesystem;

constexpr uid_t k_uid = 1000;
constexpr uint64_t k_namespace = 4026531836;

DirectoryOwner owner_with_start(pid_t pid, uint64_t start) {
  return DirectoryOwner{pid, start, k_namespace};
}
DirectoryOwner owner_by_pid_alone(pid_t pid) {
  return DirectoryOwner{pid, std::nullopt, std::nullopt};
}

LeftoverFacts facts(OwnerProcess process, uid_t directory_uid = k_uid) {
  return LeftoverFacts{directory_uid, k_uid, k_namespace, process};
}

OwnerProcess no_process() {
  return OwnerProcess{OwnerProcess::State::none, 0};
}
OwnerProcess running_since(uint64_t start) {
  return OwnerProcess{OwnerProcess::State::running, start};
}

// A pid no process has now: a child's, once it has been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

uint64_t our_pid_namespace() {
  struct stat ns {};
  EXPECT_EQ(::stat("/proc/self/ns/pid", &ns), 0);
  return ns.st_ino;
}

TEST(LeftoverDirectories, KjitsNamesSayWhoMadeThem) {
  std::optional<DirectoryOwner> worker = owner_of_directory_name("kjit-worker-1234.5678.4026531836-aB3xY9");
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->pid, 1234);
  EXPECT_EQ(worker->start_ticks, 5678u);
  EXPECT_EQ(worker->pid_namespace, 4026531836u);

  std::optional<DirectoryOwner> discovery = owner_of_directory_name("kjitd-triton-77.8.9");
  ASSERT_TRUE(discovery);
  EXPECT_EQ(discovery->pid, 77);
  EXPECT_EQ(discovery->start_ticks, 8u);

  std::optional<DirectoryOwner> home = owner_of_directory_name("kjitd-triton-home-77.8.9");
  ASSERT_TRUE(home);
  EXPECT_EQ(home->pid, 77);
  EXPECT_EQ(home->pid_namespace, 9u);

  // Names that record a pid alone: Triton's fallback, and older daemons'.
  for (const char* name : {"kjit-triton-4242", "kjitd-triton-4242"}) {
    std::optional<DirectoryOwner> legacy = owner_of_directory_name(name);
    ASSERT_TRUE(legacy) << name;
    EXPECT_EQ(legacy->pid, 4242) << name;
    EXPECT_FALSE(legacy->start_ticks) << name;
    EXPECT_FALSE(legacy->pid_namespace) << name;
  }
}

TEST(LeftoverDirectories, OtherNamesAreNotKjitsToJudge) {
  for (const char* name : {
           "kjit-worker-aB3xY9",                  // an owner-less worker directory of an older kjit
           "kjit-worker-1234.5678-aB3xY9",        // no pid namespace
           "kjit-worker-1234.5678.99",            // no mkdtemp suffix
           "kjit-worker-1234.5678.99-aB3xY9z",    // a suffix of seven
           "kjit-worker-0.5678.99-aB3xY9",        // pid 0
           "kjit-worker-+12.5678.99-aB3xY9",      // a sign
           "kjit-worker-99999999999.1.2-aB3xY9",  // no pid
           "kjit-worker-12.5678.99.1-aB3xY9",     // a fourth number
           "kjit-triton-search-1234",             // tests' and scripts' own directories
           "kjit-triton-plugin-test.so",          // (a file, as it happens)
           "kjit-triton-",                        // no pid
           "kjit-triton-12a",                     // not a number
           "kjitd-triton-home-",                  // no owner
           "kjit-workers-1234",                   // another prefix
           "kjit-daemon-aB3xY9",                  // the test support's daemons' directories
           "tileiras.aB3xY9",                     // a toolchain's
       })
    EXPECT_FALSE(owner_of_directory_name(name)) << name;
}

TEST(LeftoverDirectories, ADeadOwnersDirectoryIsRemoved) {
  EXPECT_EQ(judge_leftover(owner_with_start(1234, 5678), facts(no_process())), LeftoverVerdict::remove);
  // A zombie is dead, whoever has yet to reap it.
  EXPECT_EQ(judge_leftover(owner_with_start(1234, 5678), facts(OwnerProcess{OwnerProcess::State::ended, 5678})),
            LeftoverVerdict::remove);
  EXPECT_EQ(judge_leftover(owner_by_pid_alone(1234), facts(no_process())), LeftoverVerdict::remove);
}

TEST(LeftoverDirectories, ALiveOwnersDirectoryIsKept) {
  EXPECT_EQ(judge_leftover(owner_with_start(1234, 5678), facts(running_since(5678))),
            LeftoverVerdict::keep_owner_alive);
}

TEST(LeftoverDirectories, AReusedPidWithAnotherStartIsNotTheOwner) {
  EXPECT_EQ(judge_leftover(owner_with_start(1234, 5678), facts(running_since(9999))), LeftoverVerdict::remove);
  // A name with a pid alone cannot tell: kept while any process has the pid.
  EXPECT_EQ(judge_leftover(owner_by_pid_alone(1234), facts(running_since(9999))), LeftoverVerdict::keep_owner_alive);
}

TEST(LeftoverDirectories, AnotherUsersDirectoryIsKeptEvenWithItsOwnerDead) {
  EXPECT_EQ(judge_leftover(owner_with_start(1234, 5678), facts(no_process(), k_uid + 1)),
            LeftoverVerdict::keep_other_user);
  EXPECT_EQ(judge_leftover(owner_by_pid_alone(1234), facts(no_process(), 0)), LeftoverVerdict::keep_other_user);
}

TEST(LeftoverDirectories, AnotherPidNamespacesDirectoryIsKept) {
  const DirectoryOwner elsewhere{1234, 5678, k_namespace + 1};
  EXPECT_EQ(judge_leftover(elsewhere, facts(no_process())), LeftoverVerdict::keep_other_pid_namespace);
}

TEST(LeftoverDirectories, WhatProcIsSilentOnIsKept) {
  EXPECT_EQ(judge_leftover(owner_with_start(1234, 5678), facts(OwnerProcess{})), LeftoverVerdict::keep_unknown);
}

TEST(LeftoverDirectories, ProcSaysWhetherAnOwnerRunsAndSinceWhen) {
  const std::optional<std::string> tag = owner_tag_of_this_process();
  ASSERT_TRUE(tag);
  const std::optional<DirectoryOwner> self = owner_of_directory_name("kjitd-triton-" + *tag);
  ASSERT_TRUE(self) << *tag;
  EXPECT_EQ(self->pid, ::getpid());
  EXPECT_EQ(self->pid_namespace, our_pid_namespace());
  const OwnerProcess running = owner_process(::getpid());
  EXPECT_EQ(running.state, OwnerProcess::State::running);
  EXPECT_EQ(running.start_ticks, self->start_ticks);

  EXPECT_EQ(owner_process(dead_pid()).state, OwnerProcess::State::none);

  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  // Not reaped yet: a zombie once it has exited, which waitid can wait for
  // without reaping it.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(owner_process(zombie).state, OwnerProcess::State::ended);
  int status = 0;
  ::waitpid(zombie, &status, 0);
}

class LeftoverScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kjit-leftover-scan-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    const std::optional<std::string> tag = owner_tag_of_this_process();
    ASSERT_TRUE(tag);
    tag_ = *tag;
    start_ = *owner_of_directory_name("kjitd-triton-" + tag_)->start_ticks;
    namespace_ = std::to_string(our_pid_namespace());
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(root_, ec))
      if (entry.is_directory(ec)) fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }
  // A directory under the root with a file in it.
  fs::path make(const std::string& name) {
    fs::create_directories(root_ / name / "work");
    std::ofstream(root_ / name / "work" / "kernel.ptx") << "ptx";
    return root_ / name;
  }

  fs::path root_;
  std::string tag_;
  uint64_t start_ = 0;
  std::string namespace_;
};

TEST_F(LeftoverScanTest, RemovesTheDirectoriesOfGoneOwnersAndNothingElse) {
  const std::string dead = std::to_string(dead_pid());
  const std::string self = std::to_string(::getpid());
  const fs::path live = make("kjit-worker-" + tag_ + "-aB3xY9");
  const fs::path of_dead = make("kjit-worker-" + dead + ".12." + namespace_ + "-aB3xY9");
  const fs::path reused = make("kjit-worker-" + self + "." + std::to_string(start_ + 1) + "." + namespace_ + "-aB3xY9");
  const fs::path discovery = make("kjitd-triton-" + dead + ".12." + namespace_);
  const fs::path legacy = make("kjit-triton-" + dead);
  const fs::path legacy_live = make("kjit-triton-" + self);
  const fs::path other_namespace = make("kjit-worker-" + dead + ".12.1-aB3xY9");
  const fs::path not_kjits = make("kjit-workers-" + dead);
  // What a confined worker may leave: a directory it made unwritable.
  fs::create_directories(of_dead / "pch" / "locked");
  std::ofstream(of_dead / "pch" / "locked" / "header.pch") << "pch";
  fs::permissions(of_dead / "pch" / "locked", fs::perms::owner_read | fs::perms::owner_exec);
  // A name of kjit's that is a file, and one that is a link to a directory
  // elsewhere: neither is a directory the scan may remove or enter.
  std::ofstream(root_ / ("kjitd-triton-home-" + dead + ".12." + namespace_)) << "a file";
  const fs::path elsewhere = make("elsewhere");
  fs::create_directory_symlink(elsewhere, root_ / ("kjitd-triton-" + dead));

  const LeftoverScan scan = remove_leftover_directories(root_);
  EXPECT_TRUE(scan.failed.empty()) << scan.failed.front();
  EXPECT_EQ(scan.removed.size(), 4u);

  EXPECT_TRUE(fs::exists(live)) << "a live owner's directory was removed";
  EXPECT_FALSE(fs::exists(of_dead)) << "a dead owner's directory is still there";
  EXPECT_FALSE(fs::exists(reused)) << "a directory of an earlier process with this pid is still there";
  EXPECT_FALSE(fs::exists(discovery));
  EXPECT_FALSE(fs::exists(legacy));
  EXPECT_TRUE(fs::exists(legacy_live)) << "a pid-only name whose pid runs was removed";
  EXPECT_TRUE(fs::exists(other_namespace)) << "another pid namespace's directory was removed";
  EXPECT_TRUE(fs::exists(not_kjits));
  EXPECT_TRUE(fs::is_regular_file(root_ / ("kjitd-triton-home-" + dead + ".12." + namespace_)));
  EXPECT_TRUE(fs::is_symlink(root_ / ("kjitd-triton-" + dead)));
  EXPECT_TRUE(fs::exists(elsewhere / "work" / "kernel.ptx")) << "the scan followed a symbolic link";
}

// Only root can make a directory of another user's to try the scan on.
TEST_F(LeftoverScanTest, KeepsAnotherUsersDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  const fs::path theirs = make("kjit-worker-" + std::to_string(dead_pid()) + ".12." + namespace_ + "-aB3xY9");
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  const LeftoverScan scan = remove_leftover_directories(root_);
  EXPECT_TRUE(scan.removed.empty());
  EXPECT_TRUE(fs::exists(theirs));
}

}  // namespace
}  // namespace kjit
