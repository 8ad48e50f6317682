#include "support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

extern char** environ;

namespace kjit::test {
namespace {

int decode_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// This process's environment with `extra` set over it: glibc's getenv takes
// the first of two entries with one name, so an added one must replace.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || std::string_view(x).starts_with(name);
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv_in, const SpawnOptions& options) {
  std::vector<std::string> args = argv_in;
  std::vector<char*> argv = pointers_to(args);
  std::vector<std::string> env = environment_with(options.env);
  std::vector<char*> envp = pointers_to(env);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  for (auto [fd, path] : {std::pair{1, &options.stdout_path}, std::pair{2, &options.stderr_path}})
    if (!path->empty())
      posix_spawn_file_actions_addopen(&actions, fd, path->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return make_error(ErrorCode::internal, "cannot start " + args[0] + ": " + std::strerror(error));
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), exit_code_(other.exit_code_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    terminate();
    pid_ = std::exchange(other.pid_, -1);
    exit_code_ = other.exit_code_;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  terminate();
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == 0) return true;
  exit_code_ = decode_status(status);
  pid_ = -1;
  return false;
}

void ChildProcess::signal(int number) {
  if (pid_ > 0) ::kill(pid_, number);
}

int ChildProcess::wait() {
  if (pid_ > 0) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit_code_ = decode_status(status);
    pid_ = -1;
  }
  return exit_code_;
}

int ChildProcess::terminate() {
  if (running()) signal(SIGTERM);
  return wait();
}

Result<int> run_to_exit(const std::vector<std::string>& argv) {
  Result<ChildProcess> child = ChildProcess::spawn(argv, {"/dev/null", "/dev/null", {}});
  if (!child) return child.error();
  return child->wait();
}

CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  CommandResult result;
  Result<std::string> dir = make_temp_dir("kjit-command-");
  if (!dir) {
    result.err = dir.error().message;
    return result;
  }
  const SpawnOptions options{*dir + "/out", *dir + "/err", env};
  if (Result<ChildProcess> child = ChildProcess::spawn(argv, options)) result.exit_code = child->wait();
  result.out = read_file(options.stdout_path);
  result.err = read_file(options.stderr_path);
  std::error_code ignored;
  std::filesystem::remove_all(*dir, ignored);
  return result;
}

Result<std::string> make_temp_dir(const std::string& prefix) {
  std::string path = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(path.data())) return make_error(ErrorCode::internal, "mkdtemp failed for " + path);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace kjit::test
