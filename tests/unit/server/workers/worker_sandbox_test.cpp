// The worker sandbox: a confined process reads only its policy's paths, writes only its writable ones, and can open
// no sockets, run no programs but the policy's executables and signal no process outside it. Each check runs in a
// forked child, since confinement cannot be undone.
#include "server/workers/worker_sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/landlock.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace kjit {
namespace {

namespace fs = std::filesystem;

// What a child reports back through its pipe.
struct ChildReport {
  bool received = false;  // false: the child died or exec'd before reporting
  bool confined = false;
  std::string message;  // confine_this_process's description or error
  int result = -1;      // the body's answer: 0 for success, else the errno it saw
};

bool write_all(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

// Runs `body` in a forked child and collects its report; the child never returns into the test.
ChildReport run_in_child(const std::function<ChildReport()>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::close(fds[0]);
    ChildReport report = body();
    int32_t header[3] = {report.confined ? 1 : 0, report.result, static_cast<int32_t>(report.message.size())};
    bool sent =
        write_all(fds[1], header, sizeof(header)) && write_all(fds[1], report.message.data(), report.message.size());
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[4096];
  for (;;) {
    ssize_t got = ::read(fds[0], buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    bytes.append(buffer, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  ChildReport report;
  int32_t header[3];
  if (bytes.size() < sizeof(header)) return report;
  std::memcpy(header, bytes.data(), sizeof(header));
  if (bytes.size() != sizeof(header) + static_cast<size_t>(header[2])) return report;
  report.received = true;
  report.confined = header[0] != 0;
  report.result = header[1];
  report.message = bytes.substr(sizeof(header));
  return report;
}

// Confines a child with `policy`, then runs `body` in it if that worked.
ChildReport run_confined(const SandboxPolicy& policy, const std::function<int()>& body) {
  return run_in_child([&] {
    ChildReport report;
    Result<std::string> confined = confine_this_process(policy);
    report.confined = confined.ok();
    report.message = confined.ok() ? *confined : confined.error().message;
    if (confined.ok()) report.result = body();
    return report;
  });
}

// 0 when the file opens (and, for reading, yields its first byte), else the errno.
int open_errno(const std::string& path, int flags, mode_t mode = 0600) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return errno;
  int error = 0;
  if ((flags & O_ACCMODE) == O_RDONLY && !(flags & O_DIRECTORY)) {
    char byte;
    if (::read(fd, &byte, 1) != 1) error = errno != 0 ? errno : EIO;
  }
  ::close(fd);
  return error;
}

int read_errno(const std::string& path) {
  return open_errno(path, O_RDONLY);
}

int list_errno(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return errno;
  ::closedir(dir);
  return 0;
}

// Runs `program` without arguments in a child and waits for it: 0 when it ran and exited 0, the errno of its execve
// when that failed, -1 otherwise.
int run_errno(const std::string& program) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;
  const pid_t pid = ::fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    std::string name = program;
    char* argv[] = {name.data(), nullptr};
    char* envp[] = {nullptr};
    ::execve(name.c_str(), argv, envp);
    const int error = errno;
    write_all(report[1], &error, sizeof(error));
    ::_exit(127);
  }
  ::close(report[1]);
  int error = 0;  // the pipe closes without a word when execve worked
  ssize_t got = 0;
  while ((got = ::read(report[0], &error, sizeof(error))) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno;
  }
  if (got == static_cast<ssize_t>(sizeof(error))) return error;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream(path) << content;
}

class WorkerSandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    support_ = probe_sandbox_support();
    if (support_.landlock_abi == 0) GTEST_SKIP() << "no Landlock on this kernel: " << support_.describe();
    if (!support_.seccomp) GTEST_SKIP() << "no seccomp filters on this kernel: " << support_.describe();

    std::string root_template = "/tmp/kjit_sandbox_test.XXXXXX";
    ASSERT_NE(::mkdtemp(root_template.data()), nullptr) << std::strerror(errno);
    root_ = root_template;
    // Canonical, so that the paths the child opens are the ones the rules name.
    root_ = fs::canonical(root_);
    fs::create_directories(root_ / "read_only" / "nested");
    fs::create_directories(root_ / "writable");
    fs::create_directories(root_ / "outside");
    write_file(root_ / "read_only" / "library.txt", "library");
    write_file(root_ / "read_only" / "nested" / "header.h", "#define X 1");
    write_file(root_ / "single_file.txt", "single");
    write_file(root_ / "outside" / "secret.txt", "secret");

    policy_.read_only = {(root_ / "read_only").string(), (root_ / "single_file.txt").string(),
                         (root_ / "does_not_exist").string()};
    policy_.read_write = {(root_ / "writable").string(), "/dev/null"};
  }

  void TearDown() override {
    if (root_.empty()) return;
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  // Runs `body` confined and expects the confinement itself to have worked.
  int confined_result(const std::function<int()>& body) {
    ChildReport report = run_confined(policy_, body);
    EXPECT_TRUE(report.received) << "the child reported nothing";
    EXPECT_TRUE(report.confined) << report.message;
    return report.result;
  }

  SandboxSupport support_;
  SandboxPolicy policy_;
  fs::path root_;
};

TEST(SandboxSupport, DescribesWhatTheKernelOffers) {
  EXPECT_EQ((SandboxSupport{7, true}.describe()), "Landlock ABI 7, seccomp");
  EXPECT_EQ((SandboxSupport{0, false}.describe()), "no Landlock, no seccomp");
}

TEST(SandboxSupport, ProbeReportsTheKernelsLandlockAbi) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) GTEST_SKIP() << "no Landlock on this kernel: " << std::strerror(errno);
  SandboxSupport support = probe_sandbox_support();
  EXPECT_GE(support.landlock_abi, 1);
  EXPECT_EQ(support.landlock_abi, abi);
  EXPECT_TRUE(support.seccomp);
}

TEST_F(WorkerSandbox, DescriptionNamesEveryLayerApplied) {
  ChildReport report = run_confined(policy_, [] { return 0; });
  ASSERT_TRUE(report.received);
  ASSERT_TRUE(report.confined) << report.message;
  const std::string& text = report.message;
  EXPECT_NE(text.find("Landlock ABI " + std::to_string(support_.landlock_abi)), std::string::npos) << text;
  EXPECT_NE(text.find("filesystem: 2 read-only paths, 2 writable, 1 missing skipped"), std::string::npos) << text;
  EXPECT_NE(text.find("syscalls denied"), std::string::npos) << text;
  EXPECT_NE(text.find("no_new_privs"), std::string::npos) << text;
  if (support_.landlock_abi >= 4) {
    EXPECT_NE(text.find("TCP denied"), std::string::npos) << text;
  }
  if (support_.landlock_abi >= 6) {
    EXPECT_NE(text.find("signals and abstract sockets scoped"), std::string::npos) << text;
  }
  // No executables: nothing runs, and the description says nothing of them.
  EXPECT_EQ(text.find("may execute"), std::string::npos) << text;
  EXPECT_EQ(text.find("execve allowed"), std::string::npos) << text;
}

TEST_F(WorkerSandbox, ConfinedProcessCanReadItsReadOnlyPaths) {
  EXPECT_EQ(confined_result([&] { return read_errno(path("read_only/library.txt")); }), 0);
  EXPECT_EQ(confined_result([&] { return read_errno(path("read_only/nested/header.h")); }), 0);
  EXPECT_EQ(confined_result([&] { return list_errno(path("read_only/nested")); }), 0);
  // A rule on a single file gets only file rights (directory rights there would be refused).
  EXPECT_EQ(confined_result([&] { return read_errno(path("single_file.txt")); }), 0);
}

TEST_F(WorkerSandbox, ConfinedProcessCannotReadOutsideItsPolicy) {
  EXPECT_EQ(confined_result([&] { return read_errno(path("outside/secret.txt")); }), EACCES);
  EXPECT_EQ(confined_result([&] { return list_errno(path("outside")); }), EACCES);
  // The parent of the allowed paths is not itself allowed.
  EXPECT_EQ(confined_result([&] { return list_errno(root_.string()); }), EACCES);
  EXPECT_EQ(confined_result([] { return read_errno("/etc/passwd"); }), EACCES);
}

TEST_F(WorkerSandbox, ProcSelfRootDoesNotBypassThePolicy) {
  // Even with the process's own /proc directory readable (workers allow it): Landlock checks where the path lands.
  policy_.read_only.push_back("/proc/self");
  EXPECT_EQ(confined_result([] { return read_errno("/proc/self/status"); }), 0);
  EXPECT_EQ(confined_result([&] { return read_errno("/proc/self/root" + path("outside/secret.txt")); }), EACCES);
}

TEST_F(WorkerSandbox, ConfinedProcessCannotWriteOutsideItsWritableDirectory) {
  EXPECT_EQ(confined_result([&] { return open_errno(path("outside/new.txt"), O_WRONLY | O_CREAT | O_EXCL); }), EACCES);
  EXPECT_EQ(confined_result([&] { return open_errno(path("outside/secret.txt"), O_WRONLY); }), EACCES);
  EXPECT_FALSE(fs::exists(path("outside/new.txt")));
}

TEST_F(WorkerSandbox, ReadOnlyDirectoryCannotBeWritten) {
  EXPECT_EQ(confined_result([&] { return open_errno(path("read_only/library.txt"), O_WRONLY); }), EACCES);
  EXPECT_EQ(confined_result([&] { return open_errno(path("read_only/new.txt"), O_WRONLY | O_CREAT | O_EXCL); }),
            EACCES);
  EXPECT_EQ(confined_result([&] { return ::unlink(path("read_only/library.txt").c_str()) == 0 ? 0 : errno; }), EACCES);
  EXPECT_EQ(confined_result([&] { return ::mkdir(path("read_only/dir").c_str(), 0700) == 0 ? 0 : errno; }), EACCES);
  EXPECT_TRUE(fs::exists(path("read_only/library.txt")));
}

TEST_F(WorkerSandbox, ReadOnlyFileCannotBeTruncated) {
  if (support_.landlock_abi < 3) GTEST_SKIP() << "truncation is handled from Landlock ABI 3";
  EXPECT_EQ(confined_result([&] { return ::truncate(path("read_only/library.txt").c_str(), 0) == 0 ? 0 : errno; }),
            EACCES);
  EXPECT_EQ(fs::file_size(path("read_only/library.txt")), 7u);
}

TEST_F(WorkerSandbox, ConfinedProcessCanWorkInItsWritableDirectory) {
  const int abi = support_.landlock_abi;
  int result = confined_result([&] {
    const std::string dir = path("writable/sub");
    if (::mkdir(dir.c_str(), 0700) != 0) return errno;
    int fd = ::open((dir + "/a.txt").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return errno;
    bool wrote = ::write(fd, "ptx", 3) == 3;
    ::close(fd);
    if (!wrote) return EIO;
    if (::truncate((dir + "/a.txt").c_str(), 1) != 0) return errno;
    // Moving a file to another directory needs the REFER right, which ABI 1 cannot grant (always EXDEV there).
    const std::string moved = abi >= 2 ? path("writable/b.txt") : dir + "/b.txt";
    if (::rename((dir + "/a.txt").c_str(), moved.c_str()) != 0) return errno;
    if (int error = read_errno(moved); error != 0) return error;
    if (::unlink(moved.c_str()) != 0) return errno;
    if (::rmdir(dir.c_str()) != 0) return errno;
    return 0;
  });
  EXPECT_EQ(result, 0) << std::strerror(result);
}

TEST_F(WorkerSandbox, ConfinedProcessCanUseDevNull) {
  EXPECT_EQ(confined_result([] { return open_errno("/dev/null", O_RDWR); }), 0);
}

TEST_F(WorkerSandbox, ConfinedProcessCannotOpenSockets) {
  auto socket_errno = [](int domain, int type) {
    return [=] {
      int fd = ::socket(domain, type | SOCK_CLOEXEC, 0);
      if (fd < 0) return errno;
      ::close(fd);
      return 0;
    };
  };
  EXPECT_EQ(confined_result(socket_errno(AF_UNIX, SOCK_STREAM)), EPERM);
  EXPECT_EQ(confined_result(socket_errno(AF_INET, SOCK_STREAM)), EPERM);
  EXPECT_EQ(confined_result(socket_errno(AF_INET6, SOCK_DGRAM)), EPERM);
  EXPECT_EQ(confined_result([] {
              int fds[2];
              return ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0 ? 0 : errno;
            }),
            EPERM);
}

TEST_F(WorkerSandbox, ConfinedProcessCannotRunPrograms) {
  // Had execve worked, /bin/true would exit without reporting.
  EXPECT_EQ(confined_result([] {
              char program[] = "/bin/true";
              char* argv[] = {program, nullptr};
              char* envp[] = {nullptr};
              ::execve(program, argv, envp);
              return errno;
            }),
            EPERM);
}

// A toolchain that runs a tool of its own: the policy names the program, and it alone runs.
class WorkerSandboxExecutables : public WorkerSandbox {
 protected:
  void SetUp() override {
    WorkerSandbox::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    true_ = fs::canonical("/bin/true").string();
    // What a dynamically linked program needs to start, as a worker's policy allows it; the directory of the
    // programs is readable too, so that only the execute right tells the allowed one from the others.
    for (const char* path : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"})
      policy_.read_only.push_back(path);
    policy_.read_only.push_back(fs::path(true_).parent_path().string());
    policy_.executables = {true_};
  }

  std::string true_;
};

TEST_F(WorkerSandbox, ConfinedProcessCannotRunProgramsFromItsReadOnlyPaths) {
  // Readable is not runnable, even where execve itself is allowed (the policy names an executable, elsewhere).
  fs::copy_file("/bin/true", path("read_only/tool"));
  fs::permissions(path("read_only/tool"), fs::perms::owner_all);
  fs::copy_file("/bin/true", path("single_file.txt"), fs::copy_options::overwrite_existing);
  fs::permissions(path("single_file.txt"), fs::perms::owner_all);
  for (const char* lib : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"})
    policy_.read_only.push_back(lib);
  policy_.executables = {fs::canonical("/bin/false").string()};
  EXPECT_EQ(confined_result([&] { return read_errno(path("read_only/tool")); }), 0);
  EXPECT_EQ(confined_result([&] { return run_errno(path("read_only/tool")); }), EACCES);
  EXPECT_EQ(confined_result([&] { return run_errno(path("single_file.txt")); }), EACCES);
}

TEST_F(WorkerSandboxExecutables, ThePolicysExecutableRuns) {
  EXPECT_EQ(confined_result([&] { return run_errno(true_); }), 0);
  // By the name it was given as well: the rule applies to the file.
  EXPECT_EQ(confined_result([] { return run_errno("/bin/true"); }), 0);
}

TEST_F(WorkerSandboxExecutables, NoOtherProgramRuns) {
  for (const char* other : {"/bin/sh", "/bin/false"}) {
    ASSERT_NE(fs::canonical(other).string(), true_) << other << " is the same program as /bin/true here";
    EXPECT_EQ(confined_result([&] { return run_errno(other); }), EACCES) << other;
  }
  // Nor the process's own program, nor a file it may write.
  EXPECT_EQ(confined_result([] { return run_errno("/proc/self/exe"); }), EACCES);
  fs::copy_file(true_, path("writable/copy"));
  fs::permissions(path("writable/copy"), fs::perms::owner_all);
  EXPECT_EQ(confined_result([&] { return run_errno(path("writable/copy")); }), EACCES);
}

TEST_F(WorkerSandboxExecutables, DescriptionNamesTheExecutablesAndTheirLoader) {
  ChildReport report = run_confined(policy_, [] { return 0; });
  ASSERT_TRUE(report.received);
  ASSERT_TRUE(report.confined) << report.message;
  EXPECT_NE(report.message.find("may execute " + true_), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("ld-linux"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("(loader)"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("execve allowed"), std::string::npos) << report.message;
}

TEST_F(WorkerSandboxExecutables, MissingExecutablesLeaveExecDenied) {
  policy_.executables = {path("no_such_tool")};
  ChildReport report = run_confined(policy_, [] { return run_errno("/bin/true"); });
  ASSERT_TRUE(report.received);
  ASSERT_TRUE(report.confined) << report.message;
  EXPECT_EQ(report.result, EPERM) << report.message;
  EXPECT_EQ(report.message.find("execve allowed"), std::string::npos) << report.message;
}

TEST_F(WorkerSandboxExecutables, AnExecutableMustBeAnAbsolutePathToAFile) {
  for (const std::string& wrong : {std::string("true"), fs::path(true_).parent_path().string()}) {
    policy_.executables = {wrong};
    ChildReport report = run_confined(policy_, [] { return 0; });
    ASSERT_TRUE(report.received);
    EXPECT_FALSE(report.confined) << wrong;
    EXPECT_NE(report.message.find(wrong), std::string::npos) << report.message;
  }
}

TEST_F(WorkerSandbox, ConfinedProcessCannotSignalItsParent) {
  if (support_.landlock_abi < 6) GTEST_SKIP() << "signal scoping needs Landlock ABI 6";
  EXPECT_EQ(confined_result([] { return ::kill(::getppid(), 0) == 0 ? 0 : errno; }), EPERM);
  // Signals inside the sandbox still work.
  EXPECT_EQ(confined_result([] { return ::kill(::getpid(), 0) == 0 ? 0 : errno; }), 0);
}

TEST_F(WorkerSandbox, ChildrenOfAConfinedProcessStayConfined) {
  int result = confined_result([&] {
    const std::string secret = path("outside/secret.txt");
    pid_t pid = ::fork();
    if (pid < 0) return errno;
    if (pid == 0) ::_exit(read_errno(secret));
    int status = 0;
    if (::waitpid(pid, &status, 0) < 0) return errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  });
  EXPECT_EQ(result, EACCES);
}

TEST_F(WorkerSandbox, MultiThreadedProcessIsRefused) {
  ChildReport report = run_in_child([&] {
    int block[2];
    ChildReport child;
    if (::pipe2(block, O_CLOEXEC) != 0) return child;
    // The thread waits on the pipe until the child exits; _exit never joins it.
    std::thread waiter([fd = block[0]] {
      char byte;
      while (::read(fd, &byte, 1) < 0 && errno == EINTR) {
      }
    });
    waiter.detach();
    Result<std::string> confined = confine_this_process(policy_);
    child.confined = confined.ok();
    child.message = confined.ok() ? *confined : confined.error().message;
    // A refusal applies nothing: the secret is still readable.
    child.result = read_errno(path("outside/secret.txt"));
    return child;
  });
  ASSERT_TRUE(report.received);
  EXPECT_FALSE(report.confined) << report.message;
  EXPECT_NE(report.message.find("2 threads"), std::string::npos) << report.message;
  EXPECT_EQ(report.result, 0) << std::strerror(report.result);
}

}  // namespace
}  // namespace kjit
