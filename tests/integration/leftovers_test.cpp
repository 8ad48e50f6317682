// Nothing left behind: a kjitd killed with SIGKILL leaves its workers'
// directories in the temporary root, and the next kjitd to start there
// removes them, keeping those of live processes; a kjitd that stops removes
// its socket only while the path is still the socket it bound.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "server/daemon/leftover_directories.h"
#include "support/child_process.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/llvm_kernels.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

constexpr int k_killed_daemons = 20;

// A daemon's temporary root ($TMPDIR) and socket directory, fresh per test,
// so that what is left in them is exactly what daemons left.
struct Layout {
  TempDir dir;
  fs::path temp_root() const { return fs::path(dir.path()) / "tmp"; }
  fs::path socket_dir() const { return fs::path(dir.path()) / "run"; }
  std::string socket() const { return (socket_dir() / "kjitd.sock").string(); }
  Layout() {
    fs::create_directories(temp_root());
    fs::create_directories(socket_dir());
  }
};

// A daemon with one worker whose $TMPDIR is the layout's temporary root and
// whose cache is in it.
DaemonOptions daemon_in(const Layout& layout, const std::string& socket) {
  DaemonOptions options{{"--compile-workers", "1", "--cache-dir", (layout.temp_root() / "cache").string()}};
  options.socket_path = socket;
  options.env = {"TMPDIR=" + layout.temp_root().string()};
  return options;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    names.insert(entry.path().filename().string());
  return names;
}

// The worker directories under `root` whose names say `daemon` made them.
std::vector<std::string> worker_directories_of(const fs::path& root, pid_t daemon) {
  std::vector<std::string> out;
  for (const std::string& name : names_in(root)) {
    const std::optional<DirectoryOwner> owner = owner_of_directory_name(name);
    if (name.starts_with("kjit-worker-") && owner && owner->pid == daemon) out.push_back(name);
  }
  return out;
}

// The compile workers (kjitd --worker-fd) whose parent is `daemon`.
std::vector<pid_t> workers_of(pid_t daemon) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file((entry.path() / "stat").string());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) continue;
    // pid (comm) state ppid ...
    if (std::stol(stat.substr(stat.find(' ', close + 2) + 1)) != daemon) continue;
    if (read_file((entry.path() / "cmdline").string()).find("--worker-fd") != std::string::npos)
      out.push_back(std::stoi(name));
  }
  return out;
}

// Ended, or a zombie whoever inherited it has not reaped.
bool process_gone(pid_t pid) {
  return owner_process(pid).state != OwnerProcess::State::running;
}

// A kernel of its own per daemon, so that each compile misses the cache and
// runs in the daemon's worker.
CompileRequest request_number(int number) {
  return llvm_request(k_llvm_vadd + "\n; compile " + std::to_string(number) + "\n", "cuda:90");
}

TEST(Leftovers, KilledDaemonsLeaveNothingOnceAnotherStartsAndStopsThere) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  Layout layout;
  // This process is live: a directory in its name must survive every scan,
  // and so must one whose name says a pid alone that a process has (pid 1).
  const std::optional<std::string> tag = owner_tag_of_this_process();
  ASSERT_TRUE(tag);
  const fs::path live = layout.temp_root() / ("kjit-worker-" + *tag + "-aB3xY9");
  const fs::path pid_alone = layout.temp_root() / "kjit-triton-1";
  fs::create_directories(live);
  fs::create_directories(pid_alone);
  // Everything but these two is what daemons made.
  auto of_daemons = [&] {
    std::set<std::string> names = names_in(layout.temp_root());
    names.erase(live.filename().string());
    names.erase(pid_alone.filename().string());
    return names;
  };

  for (int round = 0; round < k_killed_daemons; ++round) {
    SCOPED_TRACE("daemon " + std::to_string(round + 1) + " of " + std::to_string(k_killed_daemons));
    Result<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::start(daemon_in(layout, layout.socket()));
    ASSERT_TRUE(daemon) << daemon.error().message;
    const pid_t pid = (*daemon)->pid();
    // What the daemons killed before it left went at its start.
    for (const std::string& name : of_daemons()) {
      if (name == "cache") continue;
      const std::optional<DirectoryOwner> owner = owner_of_directory_name(name);
      EXPECT_TRUE(owner && owner->pid == pid) << name << " is not daemon " << pid << "'s";
    }
    Result<CompileResult> compiled =
        Client((*daemon)->socket_path(), {std::chrono::seconds(60)}).compile(request_number(round));
    ASSERT_TRUE(compiled) << compiled.error().message;
    const std::vector<pid_t> workers = workers_of(pid);
    ASSERT_FALSE(workers.empty()) << "daemon " << pid << " has no worker";
    (*daemon)->signal(SIGKILL);
    EXPECT_EQ((*daemon)->stop(), 128 + SIGKILL);
    // Its workers read the end of their socket and exit; their directories stay.
    for (pid_t worker : workers) ASSERT_TRUE(eventually([&] { return process_gone(worker); })) << "worker " << worker;
    ASSERT_FALSE(worker_directories_of(layout.temp_root(), pid).empty())
        << "no worker directory named for daemon " << pid;
  }

  TestDaemon last(daemon_in(layout, layout.socket()));
  ASSERT_TRUE(last.status());
  for (const std::string& name : of_daemons()) {
    if (name == "cache") continue;
    const std::optional<DirectoryOwner> owner = owner_of_directory_name(name);
    EXPECT_TRUE(owner && owner->pid == last.pid()) << name << " of a killed daemon is still there";
  }
  Result<CompileResult> compiled =
      Client(last.socket_path(), {std::chrono::seconds(60)}).compile(request_number(k_killed_daemons));
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_EQ(last.stop(), 0);

  EXPECT_EQ(of_daemons(), std::set<std::string>{"cache"});
  EXPECT_TRUE(fs::exists(live)) << "a live process's directory was removed";
  EXPECT_TRUE(fs::exists(pid_alone)) << "a directory whose pid runs was removed";
  // The socket's directory keeps the empty working directory daemons share, nothing else.
  EXPECT_EQ(names_in(layout.socket_dir()), std::set<std::string>{".kjitd-empty"});
}

// Directories of a process that is gone, under names that say only a pid
// (Triton's fallback, older daemons), go at the next start.
TEST(Leftovers, PidOnlyNamesOfAGoneProcessAreRemovedAtTheStart) {
  Layout layout;
  // A child that has ended and been reaped: no process has its pid now.
  Result<ChildProcess> child = ChildProcess::spawn({"/bin/true"});
  ASSERT_TRUE(child);
  const pid_t gone = child->pid();
  child->wait();
  for (const std::string& name : {"kjit-triton-" + std::to_string(gone), "kjitd-triton-" + std::to_string(gone)})
    fs::create_directories(layout.temp_root() / name / "probe-0");
  TestDaemon daemon(daemon_in(layout, layout.socket()));
  ASSERT_TRUE(daemon.status());
  EXPECT_FALSE(fs::exists(layout.temp_root() / ("kjit-triton-" + std::to_string(gone))));
  EXPECT_FALSE(fs::exists(layout.temp_root() / ("kjitd-triton-" + std::to_string(gone))));
}

// Two daemons may share a temporary root: the second's start keeps the
// first's worker directories, and the first still compiles.
TEST(Leftovers, ASecondDaemonOnTheSameRootKeepsTheFirstOnesDirectories) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  Layout layout;
  TestDaemon first(daemon_in(layout, layout.socket()));
  ASSERT_TRUE(first.status());
  ASSERT_TRUE(eventually([&] { return !worker_directories_of(layout.temp_root(), first.pid()).empty(); }))
      << "the first daemon's worker made no directory";
  const std::vector<std::string> firsts = worker_directories_of(layout.temp_root(), first.pid());
  TestDaemon second(daemon_in(layout, (layout.socket_dir() / "second.sock").string()));
  ASSERT_TRUE(second.status());
  for (const std::string& name : firsts) EXPECT_TRUE(fs::exists(layout.temp_root() / name)) << name;
  Result<CompileResult> compiled = Client(first.socket_path(), {std::chrono::seconds(60)}).compile(request_number(0));
  EXPECT_TRUE(compiled) << compiled.error().message;
}

// The path's daemon was taken for dead and its socket removed; another
// daemon has bound the path since. The first one's stop leaves the second's
// socket and direct-read manifest where they are.
TEST(Leftovers, AStoppingDaemonLeavesASocketAnotherDaemonBoundSince) {
  Layout layout;
  const std::string manifest = layout.socket() + ".direct.json";
  TestDaemon first(daemon_in(layout, layout.socket()));
  ASSERT_TRUE(first.status());
  ASSERT_TRUE(fs::remove(layout.socket()));
  TestDaemon second(daemon_in(layout, layout.socket()));
  ASSERT_TRUE(second.status());
  ASSERT_TRUE(fs::exists(manifest)) << "the second daemon published no direct-read manifest";

  EXPECT_EQ(first.stop(), 0);
  EXPECT_TRUE(fs::is_socket(layout.socket())) << "the first daemon's stop removed the second's socket";
  Result<std::string> health = Client(layout.socket(), {std::chrono::seconds(10)}).health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ(*health, "SERVING");
  ASSERT_TRUE(fs::exists(manifest)) << "the first daemon's stop removed the second's manifest";
  EXPECT_EQ(nlohmann::json::parse(read_file(manifest)).value("kjitd_pid", 0), second.pid());

  // Its own socket and manifest, the second daemon removes.
  EXPECT_EQ(second.stop(), 0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(layout.socket())));
  EXPECT_FALSE(fs::exists(manifest));
}

}  // namespace
}  // namespace kjit::test
