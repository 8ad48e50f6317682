// kjit_bench_fleet: a client's miss and hit latency while background fleet
// builds run, against an idle daemon, in one run. Two kjitd in turn, the
// same workload on each: a miss (a new variant of a real kernel, for
// cuda:90), then memory hits of a warm request for a window, paced, again
// and again. The "fleet" daemon has `[fleet] targets` (cuda:90 and the
// others given), so each miss queues a background build per other target,
// which runs during the following hits and misses; the "idle" daemon has
// none. Prints p50/p99 of each and the ratios fleet / idle (the aim: within
// 1.1x), and what the fleet built. Both daemons get the same compile
// workers, so the background has its spare slot.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_kernels.h"
#include "kjit/client.h"
#include "sample_stats.h"
#include "timed_compile.h"
#include "support/daemon_process.h"

namespace kjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Samples {
  std::vector<double> miss_ms, hit_ms;
  DaemonStatus::Fleet fleet;
};


Result<Samples> measure(const std::string& fleet_targets, int workers, int misses, int window_ms,
                        const std::string& tag, const std::string& kjitd) {
  test::DaemonOptions options{{"--compile-workers", std::to_string(workers)}};
  options.kjitd = kjitd;
  options.deadline = std::chrono::seconds(60);
  if (!fleet_targets.empty()) options.config = "[fleet]\ntargets = [" + fleet_targets + "]\n";
  Result<std::unique_ptr<test::DaemonProcess>> daemon = test::DaemonProcess::start(std::move(options));
  if (!daemon) return daemon.error();
  Client client((*daemon)->socket_path());
  const CompileRequest hot = saxpy_request("hot");
  if (Result<double> warm = timed_compile(client, hot, "compiled"); !warm) return warm.error();
  Samples out;
  for (int i = 0; i < misses; ++i) {
    // Each daemon has its own cache directory: the same variants miss on both.
    Result<double> miss = timed_compile(client, saxpy_request(tag + std::to_string(i)), "compiled");
    if (!miss) return miss.error();
    out.miss_ms.push_back(*miss);
    const auto end = Clock::now() + std::chrono::milliseconds(window_ms);
    while (Clock::now() < end) {
      Result<double> hit = timed_compile(client, hot, "memory");
      if (!hit) return hit.error();
      out.hit_ms.push_back(*hit);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  Result<DaemonStatus> status = client.status();
  if (!status) return status.error();
  out.fleet = status->fleet;
  return out;
}

int run(const std::string& targets, int workers, int misses, int window_ms, const std::string& kjitd) {
  // A target list as TOML strings: cuda:80,cuda:100 -> "cuda:80", "cuda:100".
  std::string fleet = "\"cuda:90\"";
  size_t at = 0;
  while (at < targets.size()) {
    const size_t comma = targets.find(',', at);
    const std::string one = targets.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!one.empty()) fleet += ", \"" + one + "\"";
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  Result<Samples> idle = measure("", workers, misses, window_ms, "v", kjitd);
  if (!idle) return std::fprintf(stderr, "kjit_bench_fleet: idle daemon: %s\n", idle.error().message.c_str()), 1;
  Result<Samples> busy = measure(fleet, workers, misses, window_ms, "v", kjitd);
  if (!busy) return std::fprintf(stderr, "kjit_bench_fleet: fleet daemon: %s\n", busy.error().message.c_str()), 1;

  std::printf("fleet: [%s], %d compile workers, %d misses, hits for %d ms after each\n", fleet.c_str(), workers,
              misses, window_ms);
  std::printf("%-6s %8s %10s %10s %10s %10s %8s\n", "", "samples", "idle p50", "fleet p50", "idle p99", "fleet p99",
              "p50 x / p99 x");
  auto row = [](const char* what, const std::vector<double>& a, const std::vector<double>& b) {
    const double a50 = median(a), b50 = median(b), a99 = percentile(a, 99), b99 = percentile(b, 99);
    std::printf("%-6s %8zu %8.3f ms %8.3f ms %8.3f ms %8.3f ms  %.2fx / %.2fx\n", what, b.size(), a50, b50, a99, b99,
                a50 > 0 ? b50 / a50 : 0, a99 > 0 ? b99 / a99 : 0);
  };
  row("miss", idle->miss_ms, busy->miss_ms);
  row("hit", idle->hit_ms, busy->hit_ms);
  const DaemonStatus::Fleet& f = busy->fleet;
  std::printf("background: %llu compiled, %llu already cached, %llu failed, %llu dropped, %llu queued at the end, "
              "%llu waited for clients\n",
              static_cast<unsigned long long>(f.compiled), static_cast<unsigned long long>(f.cached),
              static_cast<unsigned long long>(f.failed), static_cast<unsigned long long>(f.dropped),
              static_cast<unsigned long long>(f.queued), static_cast<unsigned long long>(f.yielded));
  if (!f.last_failure.empty()) std::printf("last failure: %s\n", f.last_failure.c_str());
  return 0;
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  CLI::App app{"kjit_bench_fleet: client latency while background fleet builds run, against an idle daemon"};
  std::string targets = "cuda:80,cuda:100";
  int workers = 4, misses = 20, window_ms = 300;
  app.add_option("--targets", targets, "the fleet's other targets, comma separated (cuda:90 is the client's)");
  app.add_option("--workers", workers, "compile workers of both daemons")->check(CLI::Range(2, 64));
  app.add_option("--misses", misses, "misses per daemon")->check(CLI::Range(1, 100000));
  app.add_option("--hit-window-ms", window_ms, "how long hits are measured after each miss")
      ->check(CLI::Range(1, 600000));
  std::string kjitd;
  app.add_option("--kjitd", kjitd, "the kjitd to run (default: this build's); a copy is safe from relinks");
  CLI11_PARSE(app, argc, argv);
  return kjit::bench::run(targets, workers, misses, window_ms, kjitd);
}
