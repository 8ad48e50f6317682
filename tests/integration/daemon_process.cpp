#include "daemon_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kjit/client.h"

extern char** environ;

namespace kjit::test {
namespace {

std::string make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kjit-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string kjitd_path() { return KJIT_TEST_KJITD; }
std::string kjit_cli_path() { return KJIT_TEST_KJIT_CLI; }
std::string source_dir() { return KJIT_TEST_SOURCE_DIR; }

DaemonProcess::DaemonProcess(std::vector<std::string> extra_args) {
  dir_ = make_temp_dir();
  socket_path_ = dir_ + "/kjitd.sock";
  std::vector<std::string> args{kjitd_path(), "--socket", socket_path_, "--log-level", "warn"};
  // Each daemon gets its own disk cache unless the test shares one: tests
  // must never read or fill the user's ~/.cache/kjit.
  if (std::find(extra_args.begin(), extra_args.end(), "--cache-dir") == extra_args.end()) {
    args.push_back("--cache-dir");
    args.push_back(dir_ + "/cache");
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    ADD_FAILURE() << "cannot start " << kjitd_path();
    pid_ = -1;
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    // A fresh channel each time: a channel that failed to connect backs off
    // for seconds before it tries again.
    Client client(socket_path_, {std::chrono::seconds(2)});
    if (auto status = client.health(); status && *status == "SERVING") return;
    if (!running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "kjitd did not become healthy on " << socket_path_;
}

bool DaemonProcess::running() const {
  if (pid_ <= 0) return false;
  return waitpid(pid_, nullptr, WNOHANG) == 0;
}

int DaemonProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

DaemonProcess::~DaemonProcess() {
  // A clean exit is part of the contract; under the sanitizers a leak or a
  // memory error in the daemon shows up here as a non-zero status.
  if (pid_ > 0) {
    int status = stop();
    EXPECT_EQ(status, 0) << "kjitd did not exit cleanly on SIGTERM";
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

CommandResult run_command(const std::vector<std::string>& argv_in, const std::vector<std::string>& env) {
  std::string dir = make_temp_dir();
  std::string out_path = dir + "/out", err_path = dir + "/err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  std::vector<std::string> args = argv_in;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  CommandResult result;
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

}  // namespace kjit::test
