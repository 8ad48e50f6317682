// Runs a command as on a kernel without Landlock: a seccomp filter makes the
// Landlock system calls fail with ENOSYS, as a kernel built without it does,
// then the command is executed under it.
//   usage: kjit_test_without_landlock PROGRAM [ARGS...]
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <initializer_list>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (!filter || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 2;
  for (const char* name : {"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"})
    if (seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), seccomp_syscall_resolve_name(name), 0) != 0) return 2;
  if (seccomp_load(filter) != 0) return 2;
  seccomp_release(filter);
  execv(argv[1], argv + 1);
  std::perror("execv");
  return 127;
}
