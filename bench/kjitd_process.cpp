#include "kjitd_process.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "kjit/client.h"

namespace kjit::bench {

namespace {
constexpr auto k_startup_deadline = std::chrono::seconds(30);
constexpr auto k_poll_interval = std::chrono::milliseconds(20);
}  // namespace

Result<std::unique_ptr<KjitdProcess>> KjitdProcess::start(const std::string& kjitd_path,
                                                         const std::vector<std::string>& extra_args) {
  std::string dir = (std::filesystem::temp_directory_path() / "kjit-bench-XXXXXX").string();
  if (!mkdtemp(dir.data())) return make_error(ErrorCode::internal, "mkdtemp failed for " + dir);

  auto started = std::chrono::steady_clock::now();
  // --no-cache: the benchmark measures compiles, not cache hits.
  std::vector<std::string> args{kjitd_path, "--socket", dir + "/kjitd.sock", "--log-level", "warn", "--no-cache"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  Result<ChildProcess> child = ChildProcess::spawn(args, ChildOutput::inherit);
  if (!child) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return child.error();
  }
  std::unique_ptr<KjitdProcess> daemon(new KjitdProcess(dir, std::move(child.value())));

  while (std::chrono::steady_clock::now() - started < k_startup_deadline) {
    // A fresh client per poll: a channel whose first connect failed backs off
    // for seconds before it retries, which would inflate the startup figure.
    Client client(daemon->socket_path_, {std::chrono::seconds(2)});
    if (Result<std::string> status = client.health(); status && *status == "SERVING") {
      daemon->startup_ms_ =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      return daemon;
    }
    if (!daemon->child_.running())
      return make_error(ErrorCode::unavailable,
                        "kjitd exited with code " + std::to_string(daemon->child_.wait()) + " before serving");
    std::this_thread::sleep_for(k_poll_interval);
  }
  return make_error(ErrorCode::unavailable, "kjitd did not answer health checks on " + daemon->socket_path_);
}

int KjitdProcess::stop() {
  return child_.terminate();
}

KjitdProcess::~KjitdProcess() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace kjit::bench
