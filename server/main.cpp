// kjitd: the kjit compile daemon, or (with --worker-fd) one of its compile
// workers, or (with --check-config) a check of the daemon's configuration.
// What these set up alike is here; the rest is theirs.
#include <absl/synchronization/mutex.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>

#include "server/workers/compile_worker.h"
#include "server/daemon/daemon_lifetime.h"
#include "server/daemon/daemon_command_line.h"
#include "server/config/daemon_config.h"
#include "server/observe/request_log.h"

int main(int argc, char** argv) {
  int exit_code = 0;
  std::optional<kjit::DaemonCommandLine> line = kjit::read_command_line(argc, argv, exit_code);
  if (!line) return exit_code;
  const kjit::DaemonConfig& config = line->config;
  const int worker_fd = line->worker_fd;

  // Debian's abseil is built with assertions on, so every absl::Mutex inside
  // gRPC also maintains a deadlock-detection graph: ~4 % of the CPU of a
  // memory hit, measured. kjit's own locks are std::mutex.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // glibc gives each thread that allocates its own arena, up to 8 per core;
  // cache entries freed by one thread's eviction then sit in another's arena
  // and resident memory overshot the memory tier's budget by up to 2x. One
  // arena per core keeps it within budget + fixed overhead (measured by
  // kjit_bench_cache). MALLOC_ARENA_MAX in the environment still wins.
  if (!std::getenv("MALLOC_ARENA_MAX"))
    mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));

  const std::string logger_name = worker_fd >= 0 ? "kjitd-worker" : "kjitd";
  auto logger = spdlog::stderr_color_mt(logger_name);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  kjit::use_request_log_format();
  // Workers write to their stderr, which the daemon reads and logs.
  if (worker_fd < 0 && !line->check_config && !config.log_file.empty())
    if (!kjit::log_to_file(config.log_file, logger_name)) return 1;

  if (worker_fd >= 0) kjit::worker_main(config, line->worker_setup, worker_fd);
  if (line->check_config) return kjit::check_configuration(config);
  return kjit::serve_until_signalled(config, line->worker_launch, line->reread);
}
