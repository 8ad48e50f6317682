#include "server/daemon/daemon_lifetime.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "server/daemon/daemon.h"

namespace kjit {

int serve_until_signalled(const DaemonConfig& config, const WorkerLaunch& workers,
                          std::function<Result<DaemonConfig>()> reread) {
  // Signals are taken by one thread with sigwait, so shutdown runs outside a
  // signal handler. Blocked before any thread starts, so all inherit it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Daemon daemon(config, workers);
  daemon.set_reread(std::move(reread));
  if (Status s = daemon.start(); !s) {
    spdlog::error("{}", s.error().message);
    return 1;
  }
  std::atomic<bool> exiting{false};
  std::thread drainer;
  std::thread signal_thread([&] {
    for (;;) {
      int signal = 0;
      sigwait(&signals, &signal);
      if (exiting) return;
      if (signal == SIGHUP) {
        // Reopens the log file too (after logrotate moved it away). A
        // refused reload is logged and counted there; the daemon serves on.
        static_cast<void>(daemon.reload());
        continue;
      }
      if (!drainer.joinable()) {
        // The first SIGTERM or SIGINT drains; the calls in flight finish.
        spdlog::info("signal {}: draining, then shutting down (again to stop at once)", signal);
        drainer = std::thread([&] { daemon.drain(); });
        continue;
      }
      spdlog::info("signal {} while draining: shutting down now", signal);
      daemon.shutdown();
      return;
    }
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
  exiting = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (drainer.joinable()) drainer.join();
  return 0;
}

}  // namespace kjit
