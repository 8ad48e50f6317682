#include "support/daemon_process.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kjit/client.h"

namespace kjit::test {
namespace {

using Clock = std::chrono::steady_clock;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

std::string kjitd_path() {
  return KJIT_TEST_KJITD;
}
std::string kjit_cli_path() {
  return KJIT_TEST_KJIT_CLI;
}
std::string source_dir() {
  return KJIT_TEST_SOURCE_DIR;
}
std::string cuda_home() {
  return KJIT_TEST_CUDA_HOME;
}

DaemonProcess::DaemonProcess(DaemonOptions options) {
  Result<std::string> dir = make_temp_dir("kjit-daemon-");
  if (!dir) {
    status_ = dir.error();
    return;
  }
  dir_ = *dir;
  socket_path_ = options.socket_path.empty() ? dir_ + "/kjitd.sock" : options.socket_path;
  std::vector<std::string> argv{options.kjitd.empty() ? kjitd_path() : options.kjitd, "--socket", socket_path_};
  // Quiet unless the test asks for a level of its own.
  if (std::find(options.args.begin(), options.args.end(), "--log-level") == options.args.end())
    argv.insert(argv.end(), {"--log-level", "warn"});
  if (!options.triton_prestart) argv.push_back("--no-triton-prestart");
  if (!options.triton_builds && !std::string(KJIT_TEST_LOCAL_TOOLKIT_PREFIX).empty()) {
    const std::string wheels = dir_ + "/cuda-wheels";
    std::error_code ec;
    std::filesystem::create_directory_symlink(KJIT_TEST_LOCAL_TOOLKIT_PREFIX, wheels, ec);
    if (ec) {
      status_ = make_error(ErrorCode::internal, "cannot link " + wheels + ": " + ec.message());
      return;
    }
    // Top-level keys come before the config's first table.
    options.config = "local_toolkit_prefix = \"" + wheels + "\"\n" + options.config;
  }
  if (!options.config.empty()) {
    write_file(config_path(), options.config);
    argv.insert(argv.end(), {"--config", config_path()});
  }
  if (std::find(options.args.begin(), options.args.end(), "--cache-dir") == options.args.end())
    argv.insert(argv.end(), {"--cache-dir", dir_ + "/cache"});
  argv.insert(argv.end(), options.args.begin(), options.args.end());

  const auto spawned = Clock::now();
  Result<ChildProcess> child =
      ChildProcess::spawn(argv, {"", options.capture_log ? dir_ + "/kjitd.log" : "", options.env});
  if (!child) {
    status_ = child.error();
    return;
  }
  child_.emplace(std::move(child.value()));
  while (Clock::now() - spawned < options.deadline) {
    // A fresh client per poll: a channel whose first connect failed backs off
    // for seconds before it retries.
    Client client(socket_path_, {std::chrono::seconds(2)});
    if (Result<std::string> health = client.health(); health && *health == "SERVING") {
      startup_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - spawned).count();
      return;
    }
    if (!child_->running()) {
      status_ = make_error(ErrorCode::unavailable,
                           "kjitd exited with code " + std::to_string(child_->wait()) + " before serving");
      child_.reset();  // nothing left to stop
      return;
    }
    std::this_thread::sleep_for(options.poll);
  }
  status_ = make_error(ErrorCode::unavailable, "kjitd did not answer health checks on " + socket_path_);
}

Result<std::unique_ptr<DaemonProcess>> DaemonProcess::start(DaemonOptions options) {
  auto daemon = std::make_unique<DaemonProcess>(std::move(options));
  if (!daemon->status()) return daemon->status().error();
  return daemon;
}

DaemonProcess::~DaemonProcess() {
  stop();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string DaemonProcess::log() const {
  return read_file(dir_ + "/kjitd.log");
}

void DaemonProcess::signal(int number) {
  if (child_) child_->signal(number);
}

int DaemonProcess::stop() {
  if (!child_) return -1;
  const int code = child_->terminate();
  child_.reset();
  return code;
}

CommandResult run_kjitd(const std::vector<std::string>& args, const std::string& config) {
  Result<std::string> dir = make_temp_dir("kjit-refused-");
  if (!dir) return {-1, "", dir.error().message};
  std::vector<std::string> argv{"/usr/bin/timeout", "20", kjitd_path(), "--socket", *dir + "/kjitd.sock"};
  if (!config.empty()) {
    write_file(*dir + "/kjitd.toml", config);
    argv.insert(argv.end(), {"--config", *dir + "/kjitd.toml"});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult result = run_command(argv);
  std::error_code ignored;
  std::filesystem::remove_all(*dir, ignored);
  return result;
}

}  // namespace kjit::test
