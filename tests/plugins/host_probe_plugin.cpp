// Example plugin for the confinement tests: passes that do, from inside a
// compile worker, what a request must never achieve. `host-probe` tries to
// read a host file, to create one, to connect to a unix socket and to run a
// program, and fails with a diagnostic saying how each attempt ended. `include-injector`
// makes NVRTC itself try to open a host path, by a way no include filter
// can see (a link in the worker's directory, included by a relative name).
// `fd-hog` opens /dev/null until no descriptor is left, and keeps them.
// `loud-pass` and `loud-crash` write their `note` to stderr; the first then
// passes its input on, the second aborts.
#include <errno.h>
#include <fcntl.h>
#include <kjit/plugin.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::string arg(const kjit_pass_input* input, const char* key) {
  for (size_t i = 0; i < input->arg_count; ++i)
    if (std::string(input->args[i].key) == key) return input->args[i].value;
  return {};
}

std::string try_read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "read " + path + ": " + strerror(errno);
  char buffer[256];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  ::close(fd);
  return "read " + path + ": succeeded: " + std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string try_write(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "write " + path + ": " + strerror(errno);
  const char text[] = "written by a compile worker\n";
  const ssize_t n = ::write(fd, text, sizeof(text) - 1);
  ::close(fd);
  return "write " + path + ": " + (n > 0 ? "succeeded" : strerror(errno));
}

std::string try_connect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "connect " + path + ": socket: " + strerror(errno);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  const std::string how = rc == 0 ? "succeeded" : strerror(errno);
  ::close(fd);
  return "connect " + path + ": " + how;
}

// posix_spawn, not execve: a program that did run must not replace the worker.
std::string try_exec(const std::string& path) {
  char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv, envp);
  if (rc != 0) return "exec " + path + ": " + strerror(rc);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return "exec " + path + ": succeeded (status " + std::to_string(status) + ")";
}

int host_probe(const kjit_pass_input* input, const kjit_pass_output* output) {
  if (std::string path = arg(input, "read"); !path.empty())
    output->diagnostic(output->host, try_read(path).c_str());
  if (std::string path = arg(input, "write"); !path.empty())
    output->diagnostic(output->host, try_write(path).c_str());
  if (std::string path = arg(input, "connect"); !path.empty())
    output->diagnostic(output->host, try_connect(path).c_str());
  if (std::string path = arg(input, "exec"); !path.empty())
    output->diagnostic(output->host, try_exec(path).c_str());
  return 1;  // the test reads the diagnostics from the error
}

// The include is relative, so the daemon's include policy passes it; the
// symbolic link it names, made in the worker's own directory (where NVRTC
// looks for quoted includes), points at `path`.
int include_injector(const kjit_pass_input* input, const kjit_pass_output* output) {
  ::unlink("injected.h");
  if (::symlink(arg(input, "path").c_str(), "injected.h") != 0) {
    output->diagnostic(output->host, (std::string("include-injector: symlink: ") + strerror(errno)).c_str());
    return 1;
  }
  const std::string line = "#include \"injected.h\"\n";
  output->write_ir(output->host, line.data(), line.size());
  output->write_ir(output->host, input->ir, input->ir_size);
  return 0;
}

int fd_hog(const kjit_pass_input*, const kjit_pass_output* output) {
  int opened = 0;
  while (::open("/dev/null", O_RDONLY) >= 0) ++opened;  // kept open on purpose
  const std::string message = "fd-hog: opened " + std::to_string(opened) + " descriptors, then: " + strerror(errno);
  output->diagnostic(output->host, message.c_str());
  return 1;
}

int loud_pass(const kjit_pass_input* input, const kjit_pass_output* output) {
  std::fprintf(stderr, "loud-pass: %s\n", arg(input, "note").c_str());
  output->write_ir(output->host, input->ir, input->ir_size);
  return 0;
}

int loud_crash(const kjit_pass_input* input, const kjit_pass_output*) {
  std::fprintf(stderr, "loud-crash: %s\n", arg(input, "note").c_str());
  std::abort();
}

const char* const k_probe_args[] = {"read", "write", "connect", "exec"};
const char* const k_injector_args[] = {"path"};
const char* const k_note_args[] = {"note"};
const kjit_pass_desc k_passes[] = {
    {"host-probe", "1.0", "ptx", "ptx", k_probe_args, 4, host_probe},
    {"include-injector", "1.0", "cuda-source", "cuda-source", k_injector_args, 1, include_injector},
    {"fd-hog", "1.0", "ptx", "ptx", nullptr, 0, fd_hog},
    {"loud-pass", "1.0", "ptx", "ptx", k_note_args, 1, loud_pass},
    {"loud-crash", "1.0", "ptx", "ptx", k_note_args, 1, loud_crash},
};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-host-probe", "1.0", k_passes, 5, nullptr, 0, nullptr,
                                 nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
