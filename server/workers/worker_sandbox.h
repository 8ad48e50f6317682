// Confinement of a compile worker once its toolchains and plugins are loaded:
// Landlock for files, TCP and signals, seccomp for the syscalls a compile never needs.
#pragma once

#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit {

// What this kernel offers.
struct SandboxSupport {
  int landlock_abi = 0;          // 0: no Landlock (ENOSYS/EOPNOTSUPP)
  bool seccomp = false;          // seccomp filters available
  std::string describe() const;  // e.g. "Landlock ABI 7, seccomp"
};
SandboxSupport probe_sandbox_support();

struct SandboxPolicy {
  // Files or directories readable, not executable (loading a library needs no execute right); missing paths are
  // skipped. Symlinks are followed: the rule applies to their target.
  std::vector<std::string> read_only;
  // Files or directories fully usable (the worker's private temp dir, /dev/null), but not executable.
  std::vector<std::string> read_write;
  // The programs the process may run, as absolute paths to files (missing ones are skipped): none by default, so
  // execve is denied outright. For a toolchain that runs a tool of its own (a driver and its assembler). Each is
  // readable and executable, and so is the dynamic loader it names, which the kernel opens with it. The loader can
  // also be run by hand to start any ELF the process may read; that runs nothing the process could not already
  // map, and what runs stays inside this sandbox.
  std::vector<std::string> executables;
};

// Confines the calling process for good: no_new_privs; Landlock handling every filesystem right the kernel's ABI
// knows, with rules only for the policy's paths; TCP bind/connect denied (ABI >= 4); abstract unix sockets and
// signals scoped to the sandbox (ABI >= 6); a seccomp filter that fails networking, exec (unless the policy names
// executables), ptrace, mounts, namespaces, bpf, io_uring, module and kexec syscalls with EPERM. Creating and
// waiting for processes is allowed either way (threads are made the same way). Programs run inherit all of it.
//
// Landlock restricts only the calling thread and its future children, so a process with more than one thread is
// refused (an error, nothing applied). Without Landlock or seccomp it is an error too: the caller decides whether to
// run unconfined. Landlock checks the resolved location of a path, so aliases such as /proc/self/root/... stay
// denied; files opened before the call keep their access.
//
// Returns a one-line description of what was applied, or an error naming what failed. After a failure past the
// thread check the process may be partly confined (no_new_privs, Landlock): it should exit rather than carry on.
Result<std::string> confine_this_process(const SandboxPolicy& policy);

}  // namespace kjit
