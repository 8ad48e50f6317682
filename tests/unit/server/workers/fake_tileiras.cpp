// A stand-in for tileiras in confinement tests: run as "tileiras" it does
// what a subverted assembler would try, and says what happened, one
// "what: errno" line each (0: it worked); run as "ptxas" (its sibling) it
// only says it ran. Plain libc, so that it starts with the loader and libc
// alone, as the real one does.
//
// tileiras SECRET OUTPUT LIBRARY: reads LIBRARY (its wheel's libnvvm) and
// SECRET (a host file), runs its sibling ptxas and /bin/sh, writes OUTPUT
// (in its private directory) and SECRET.new beside SECRET.
// tileiras hang: never ends (for the time bound).
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

int read_errno(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char byte;
  const int error = read(fd, &byte, 1) == 1 ? 0 : errno;
  close(fd);
  return error;
}

int write_errno(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const int error = write(fd, "cubin", 5) == 5 ? 0 : errno;
  close(fd);
  return error;
}

// 0 when the program ran and exited 0, the errno of its execve otherwise.
int run_errno(const char* program) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return errno;
  const pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    char* argv[] = {const_cast<char*>(program), nullptr};
    char* envp[] = {nullptr};
    execve(program, argv, envp);
    const int error = errno;
    (void)!write(report[1], &error, sizeof error);
    _exit(127);
  }
  close(report[1]);
  int error = 0;
  const ssize_t got = read(report[0], &error, sizeof error);
  close(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got == static_cast<ssize_t>(sizeof error)) return error;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

}  // namespace

int main(int argc, char** argv) {
  char self[4096];
  snprintf(self, sizeof self, "%s", argv[0]);
  if (strcmp(basename(self), "ptxas") == 0) {
    printf("ptxas ran\n");
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "hang") == 0) {
    for (;;) pause();
  }
  if (argc != 4) {
    fprintf(stderr, "usage: tileiras SECRET OUTPUT LIBRARY | tileiras hang\n");
    return 2;
  }
  char ptxas[4096];
  snprintf(ptxas, sizeof ptxas, "%s/ptxas", dirname(self));
  char beside_secret[4096];
  snprintf(beside_secret, sizeof beside_secret, "%s.new", argv[1]);
  printf("library: %d\n", read_errno(argv[3]));
  printf("secret: %d\n", read_errno(argv[1]));
  printf("ptxas: %d\n", run_errno(ptxas));
  printf("sh: %d\n", run_errno("/bin/sh"));
  printf("output: %d\n", write_errno(argv[2]));
  printf("beside secret: %d\n", write_errno(beside_secret));
  return 0;
}
