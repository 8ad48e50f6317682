// kjitd: the kjit compile daemon.
#include <absl/synchronization/mutex.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <thread>

#include "compile_worker.h"
#include "daemon.h"
#include "daemon_command_line.h"
#include "daemon_config.h"

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

  auto logger = spdlog::stderr_color_mt(worker_fd >= 0 ? "kjitd-worker" : "kjitd");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  if (worker_fd >= 0) {
    // The daemon logs each line a worker writes with its own time and the
    // worker's pid, and keeps the last ones for the request's error.
    logger->set_pattern("%l: %v");
    // A worker says what the daemon already said at start-up only when asked.
    spdlog::set_level(std::max(spdlog::level::from_str(config.log_level), spdlog::level::warn));
    const int code = kjit::run_worker_process(config, line->worker_setup, worker_fd);
    // A confined worker cannot run exit-time checks that inspect processes
    // (LeakSanitizer needs ptrace): it leaves at once.
    spdlog::default_logger()->flush();
    std::fflush(stderr);
    std::_Exit(code);
  }

  // Signals are taken by one thread with sigwait, so shutdown runs outside a
  // signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  kjit::Daemon daemon(config);
  if (kjit::Status s = daemon.start(); !s) {
    spdlog::error("{}", s.error().message);
    return 1;
  }
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    spdlog::info("signal {}: shutting down", signal);
    daemon.shutdown();
  });
  daemon.wait();
  // gRPC's own teardown can hang for seconds after heavy traffic (seen in
  // grpc_iomgr_shutdown); the socket is gone and nothing is pending, so a
  // watchdog bounds the exit instead of letting a restart wait on it.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }).detach();
  // wait() also returns after a shutdown not caused by a signal; wake the
  // signal thread so it can be joined.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  return 0;
}
