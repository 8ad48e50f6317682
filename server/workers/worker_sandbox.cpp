// Confinement of a compile worker: Landlock through raw syscalls (there is no
// library), seccomp through libseccomp.
#include "server/workers/worker_sandbox.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>

// The build host's header may predate the kernel it runs on: these are the kernel's values, fixed by its ABI.
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset __NR_landlock_create_ruleset
#define SYS_landlock_add_rule __NR_landlock_add_rule
#define SYS_landlock_restrict_self __NR_landlock_restrict_self
#endif

namespace kjit {
namespace {

// The kernel's landlock_ruleset_attr as of ABI 6. Declared here because older headers stop after
// handled_access_fs; the size passed to the kernel says which fields it reads.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

// Landlock checks the execute right only when a file is opened to run it (execve, and the loader it names), never
// when a library is mapped: only the policy's executables get it.
constexpr uint64_t k_fs_read_file = LANDLOCK_ACCESS_FS_READ_FILE;
constexpr uint64_t k_fs_read_dir = k_fs_read_file | LANDLOCK_ACCESS_FS_READ_DIR;
// The kernel opens a program for reading to run it.
constexpr uint64_t k_fs_execute = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
// Writable places are not executable: nothing the worker writes should ever run.
constexpr uint64_t k_fs_write_file = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
constexpr uint64_t k_fs_write_dir =
    k_fs_write_file | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
    LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER;

// Every filesystem right an ABI knows: a right left unhandled would be allowed everywhere.
uint64_t handled_fs_rights(int abi) {
  uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: EXECUTE through MAKE_SYM
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return rights;
}

// Denied with EPERM whatever their arguments: a compile needs none of them, and each is a way around Landlock or
// into the kernel's less travelled code.
constexpr std::array<const char*, 39> k_denied_syscalls = {
    // New network endpoints (the daemon's socketpair was opened before and stays usable).
    "socket", "socketpair", "bind", "listen", "accept", "accept4", "connect",
    // Running another program (allowed when the policy names executables), or reading and writing another process.
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    // Changing what paths mean: mounts, roots, namespaces, opening by file handle.
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_by_handle_at", "name_to_handle_at",
    // Kernel interfaces with a history of holes.
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register",
    // Whole-system administration.
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
    "acct", "quotactl"};

Error failure(ErrorCode code, const std::string& what, int error) {
  return make_error(code, "worker sandbox: " + what + ": " + std::strerror(error));
}

// Closes on scope exit: every early return must drop the path and ruleset descriptors.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int landlock_abi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

bool seccomp_filters_available() {
  // SECCOMP_RET_ERRNO is the action the filter uses; asking for it also proves filter mode is built in.
  uint32_t action = SECCOMP_RET_ERRNO;
  return ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

// Counts /proc/self/task rather than trusting bookkeeping: threads started by libraries (CUDA, LLVM) count too.
Result<int> count_threads() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return failure(ErrorCode::failed_precondition, "cannot list /proc/self/task", errno);
  int threads = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++threads;
  }
  ::closedir(dir);
  return threads;
}

struct Rules {
  int read_only = 0;
  int read_write = 0;
  int missing = 0;
  std::vector<std::string> executables;  // as the policy names them, then the loaders they need
};

// Adds one path-beneath rule per existing path, with the rights valid for its kind (file or directory) and known to
// the ABI: the kernel rejects a file rule carrying directory rights, and a right the ruleset does not handle.
Status add_path_rules(int ruleset_fd, const std::vector<std::string>& paths, uint64_t file_rights, uint64_t dir_rights,
                      uint64_t handled, int& added, int& missing) {
  for (const std::string& path : paths) {
    Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        ++missing;
        continue;
      }
      return failure(ErrorCode::failed_precondition, "cannot open " + path, errno);
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) return failure(ErrorCode::internal, "cannot stat " + path, errno);
    landlock_path_beneath_attr rule{};
    rule.allowed_access = (S_ISDIR(info.st_mode) ? dir_rights : file_rights) & handled;
    rule.parent_fd = fd.get();
    if (::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
      return failure(ErrorCode::internal, "cannot add a Landlock rule for " + path, errno);
    }
    ++added;
  }
  return Ok{};
}

// The program interpreter (PT_INTERP) an ELF executable of this machine's class names: the dynamic loader, which the
// kernel opens for execution along with the program. Empty for a static program or any other file.
std::string elf_interpreter(int fd) {
  ElfW(Ehdr) header{};
  if (::pread(fd, &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header))) return {};
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      header.e_phentsize != sizeof(ElfW(Phdr))) {
    return {};
  }
  for (int i = 0; i < header.e_phnum; ++i) {
    ElfW(Phdr) segment{};
    const off_t at = static_cast<off_t>(header.e_phoff + static_cast<uint64_t>(i) * header.e_phentsize);
    if (::pread(fd, &segment, sizeof(segment), at) != static_cast<ssize_t>(sizeof(segment))) return {};
    if (segment.p_type != PT_INTERP) continue;
    if (segment.p_filesz == 0 || segment.p_filesz > PATH_MAX) return {};
    std::string path(segment.p_filesz, '\0');
    if (::pread(fd, path.data(), path.size(), static_cast<off_t>(segment.p_offset)) !=
        static_cast<ssize_t>(path.size())) {
      return {};
    }
    path.resize(std::strlen(path.c_str()));
    return path;
  }
  return {};
}

Status add_execute_rule(int ruleset_fd, int fd, const std::string& path, uint64_t handled) {
  landlock_path_beneath_attr rule{};
  rule.allowed_access = k_fs_execute & handled;
  rule.parent_fd = fd;
  if (::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
    return failure(ErrorCode::internal, "cannot add a Landlock rule for " + path, errno);
  }
  return Ok{};
}

// Makes exactly the policy's executables, and the loaders they name, runnable. A directory is refused: its rule
// would make everything beneath it runnable.
Status add_executable_rules(int ruleset_fd, const std::vector<std::string>& executables, uint64_t handled,
                            Rules& rules) {
  std::set<std::string> loaders;
  for (const std::string& path : executables) {
    // Opened to read its ELF header too; O_NONBLOCK so that a FIFO named by mistake cannot block.
    Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        ++rules.missing;
        continue;
      }
      return failure(ErrorCode::failed_precondition, "cannot open " + path, errno);
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) return failure(ErrorCode::internal, "cannot stat " + path, errno);
    if (!S_ISREG(info.st_mode)) {
      return make_error(ErrorCode::invalid_argument, "worker sandbox: an executable must be a file: " + path);
    }
    if (Status added = add_execute_rule(ruleset_fd, fd.get(), path, handled); !added) return added;
    rules.executables.push_back(path);
    if (std::string loader = elf_interpreter(fd.get()); !loader.empty()) loaders.insert(std::move(loader));
  }
  for (const std::string& loader : loaders) {
    Fd fd(::open(loader.c_str(), O_PATH | O_CLOEXEC));
    if (fd.get() < 0) continue;  // the program cannot run anyway, and execve says so (ENOENT)
    if (Status added = add_execute_rule(ruleset_fd, fd.get(), loader, handled); !added) return added;
    rules.executables.push_back(loader + " (loader)");
  }
  return Ok{};
}

// Builds and enforces the Landlock domain; returns the description of what it covers, and whether any executable
// may run.
Result<std::string> apply_landlock(const SandboxPolicy& policy, int abi, bool& may_execute) {
  RulesetAttr attr;
  attr.handled_access_fs = handled_fs_rights(abi);
  // The kernel reads only the fields its ABI knows, and refuses nonzero bytes beyond them: pass just those.
  size_t attr_size = offsetof(RulesetAttr, handled_access_net);
  if (abi >= 4) {
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    attr_size = offsetof(RulesetAttr, scoped);
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    attr_size = sizeof(RulesetAttr);
  }
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
  if (ruleset.get() < 0) return failure(ErrorCode::internal, "cannot create the Landlock ruleset", errno);

  Rules rules;
  Status added = add_path_rules(ruleset.get(), policy.read_only, k_fs_read_file, k_fs_read_dir, attr.handled_access_fs,
                                rules.read_only, rules.missing);
  if (!added) return added.error();
  added = add_path_rules(ruleset.get(), policy.read_write, k_fs_write_file, k_fs_write_dir, attr.handled_access_fs,
                         rules.read_write, rules.missing);
  if (!added) return added.error();
  added = add_executable_rules(ruleset.get(), policy.executables, attr.handled_access_fs, rules);
  if (!added) return added.error();
  may_execute = !rules.executables.empty();

  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return failure(ErrorCode::internal, "cannot enforce the Landlock ruleset", errno);
  }

  std::string text = "Landlock ABI " + std::to_string(abi) + " (filesystem: " + std::to_string(rules.read_only) +
                     (rules.read_only == 1 ? " read-only path, " : " read-only paths, ") +
                     std::to_string(rules.read_write) + " writable";
  if (rules.missing > 0) text += ", " + std::to_string(rules.missing) + " missing skipped";
  if (!rules.executables.empty()) {
    text += "; may execute ";
    for (size_t i = 0; i < rules.executables.size(); ++i) text += (i > 0 ? ", " : "") + rules.executables[i];
  }
  if (abi >= 4) text += "; TCP denied";
  if (abi >= 6) text += "; signals and abstract sockets scoped";
  return text + ")";
}

// Loads the seccomp filter; returns how many syscalls it denies. `allow_exec`: execve and execveat are not among
// them (Landlock then decides which files run).
Result<int> apply_seccomp(bool allow_exec) {
  scmp_filter_ctx filter = ::seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr) return make_error(ErrorCode::internal, "worker sandbox: cannot create the seccomp filter");
  struct FilterRelease {
    scmp_filter_ctx filter;
    ~FilterRelease() { ::seccomp_release(filter); }
  } release{filter};

  // A syscall made through another architecture's entry (int 0x80, x32) would bypass rules written for the native
  // numbers: kill the process instead of letting it through.
  int rc = ::seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return failure(ErrorCode::internal, "cannot set the seccomp bad-architecture action", -rc);

  int denied = 0;
  for (const char* name : k_denied_syscalls) {
    // A syscall this architecture lacks cannot be made; skip it rather than fail.
    int number = ::seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) continue;
    if (allow_exec && (std::strcmp(name, "execve") == 0 || std::strcmp(name, "execveat") == 0)) continue;
    rc = ::seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), number, 0);
    if (rc != 0) return failure(ErrorCode::internal, std::string("cannot add a seccomp rule for ") + name, -rc);
    ++denied;
  }
  rc = ::seccomp_load(filter);
  if (rc != 0) return failure(ErrorCode::internal, "cannot load the seccomp filter", -rc);
  return denied;
}

}  // namespace

std::string SandboxSupport::describe() const {
  std::string text = landlock_abi > 0 ? "Landlock ABI " + std::to_string(landlock_abi) : "no Landlock";
  return text + (seccomp ? ", seccomp" : ", no seccomp");
}

SandboxSupport probe_sandbox_support() {
  SandboxSupport support;
  support.landlock_abi = landlock_abi();
  support.seccomp = seccomp_filters_available();
  return support;
}

Result<std::string> confine_this_process(const SandboxPolicy& policy) {
  const SandboxSupport support = probe_sandbox_support();
  if (support.landlock_abi == 0) {
    return make_error(ErrorCode::failed_precondition, "worker sandbox: the kernel has no Landlock");
  }
  if (!support.seccomp) {
    return make_error(ErrorCode::failed_precondition, "worker sandbox: the kernel has no seccomp filters");
  }
  // Checked before anything is applied, so a refusal leaves the process as it was.
  Result<int> threads = count_threads();
  if (!threads) return threads.error();
  if (*threads != 1) {
    return make_error(ErrorCode::failed_precondition, "worker sandbox: the process has " + std::to_string(*threads) +
                                                          " threads; Landlock would confine only the calling one");
  }
  // A relative path would mean whatever the working directory makes of it when the rule is added.
  for (const std::string& path : policy.executables) {
    if (path.empty() || path[0] != '/') {
      return make_error(ErrorCode::invalid_argument, "worker sandbox: an executable must be an absolute path: " + path);
    }
  }

  // Required by landlock_restrict_self and seccomp without CAP_SYS_ADMIN, and keeps setuid programs from
  // regaining what the sandbox takes away.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return failure(ErrorCode::internal, "cannot set no_new_privs", errno);
  }
  // execve is allowed only when one of the executables can run: a policy whose executables are all missing keeps it
  // denied.
  bool allow_exec = false;
  Result<std::string> landlock = apply_landlock(policy, support.landlock_abi, allow_exec);
  if (!landlock) return landlock.error();
  Result<int> denied = apply_seccomp(allow_exec);
  if (!denied) return denied.error();
  return *landlock + ", seccomp (" + std::to_string(*denied) + " syscalls denied" +
         (allow_exec ? ", execve allowed" : "") + "), no_new_privs";
}

}  // namespace kjit
