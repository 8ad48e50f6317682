// kjit_bench_fleet: a client's miss and hit latency while background fleet
// builds run, against an idle daemon, in one run. Two kjitd, the same
// workload on each: a miss (a new variant of a real kernel, for cuda:90),
// then memory hits of a warm request for a window, paced, again and again.
// The "fleet" daemon has `[fleet] targets` (cuda:90 and the others given),
// so each miss queues a background build per other target, which runs
// during the following hits and misses; the "idle" daemon has none. Both
// get the same compile workers, so the background has its spare slot. The
// pair runs for several rounds, which of the two goes first alternating,
// each round on new daemons; it prints each round's ratios fleet / idle
// and p50/p99 over every round's samples (the aim: within 1.1x), and what
// the fleet built. With --heavy-builds each round's every miss comes after
// an untimed compile of a new CUB kernel, whose fleet builds (a second or
// more each) then run while the miss and the hits are measured.
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


// A kernel with heavy includes (CUB block reduce and scan), new for each variant.
CompileRequest cub_request(const std::string& variant) {
  CompileRequest request;
  request.input = R"(#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
extern "C" __global__ void seed(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  using S = cub::BlockScan<int, 128>;
  __shared__ union { typename R::TempStorage r; typename S::TempStorage s; } t;
  int v = in[blockIdx.x * 128 + threadIdx.x];
  int p; S(t.s).ExclusiveSum(v, p);
  __syncthreads();
  int s = R(t.r).Sum(p);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
// )" + variant + "\n";
  request.input_name = "seed.cu";
  request.target = "cuda:90";
  return request;
}

Result<Samples> measure(const std::string& fleet_targets, int workers, int misses, int window_ms, bool heavy_builds,
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
  // Untimed, a miss per worker: each worker's first compile loads what
  // NVRTC loads at its first use, and the pool hands successive compiles to
  // the worker ready longest, so the first misses would each meet a new one.
  for (int i = 0; i < workers; ++i)
    if (Result<double> warm = timed_compile(client, saxpy_request(tag + "warm" + std::to_string(i)), "compiled");
        !warm)
      return warm.error();
  // The fleet builds those queued, done before the measure starts.
  const auto settled = Clock::now() + std::chrono::seconds(60);
  uint64_t warm_built = 0;  // not counted as the measure's
  for (;;) {
    Result<DaemonStatus> status = client.status();
    if (!status) return status.error();
    warm_built = status->fleet.compiled;
    if ((status->fleet.queued == 0 && status->fleet.running == 0) || Clock::now() > settled) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Samples out;
  for (int i = 0; i < misses; ++i) {
    if (heavy_builds)  // untimed: what the fleet daemons then build in the background
      if (Result<double> seed = timed_compile(client, cub_request(tag + std::to_string(i)), "compiled"); !seed)
        return seed.error();
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
  out.fleet.compiled -= warm_built;
  return out;
}

int run(const std::string& targets, int workers, int misses, int window_ms, int rounds, bool heavy_builds,
        const std::string& kjitd) {
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
  std::printf("fleet: [%s], %d compile workers, %d misses per round, hits for %d ms after each%s; ratios fleet / "
              "idle\n",
              fleet.c_str(), workers, misses, window_ms,
              heavy_builds ? ", each miss after a CUB kernel's compile (heavy fleet builds)" : "");
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  Samples idle_all, fleet_all;
  for (int round = 0; round < rounds; ++round) {
    // Which daemon goes first alternates: a machine that grows busier or
    // quieter during the run weighs on both sides alike.
    Result<Samples> idle = make_error(ErrorCode::internal, "not run"), busy = idle;
    for (int side = 0; side < 2; ++side) {
      const bool fleet_side = (side == 0) == (round % 2 == 1);
      const std::string tag = "r" + std::to_string(round) + "v";
      (fleet_side ? busy : idle) = measure(fleet_side ? fleet : "", workers, misses, window_ms, heavy_builds, tag,
                                           kjitd);
      const Result<Samples>& done = fleet_side ? busy : idle;
      if (!done)
        return std::fprintf(stderr, "kjit_bench_fleet: %s daemon: %s\n", fleet_side ? "fleet" : "idle",
                            done.error().message.c_str()),
               1;
    }
    std::printf("round %d (%s first): miss p50 %.2fx p99 %.2fx, hit p50 %.2fx p99 %.2fx; %llu built\n", round + 1,
                round % 2 == 1 ? "fleet" : "idle", ratio(median(busy->miss_ms), median(idle->miss_ms)),
                ratio(percentile(busy->miss_ms, 99), percentile(idle->miss_ms, 99)),
                ratio(median(busy->hit_ms), median(idle->hit_ms)),
                ratio(percentile(busy->hit_ms, 99), percentile(idle->hit_ms, 99)),
                static_cast<unsigned long long>(busy->fleet.compiled));
    for (Samples* all : {&idle_all, &fleet_all}) {
      const Samples& one = all == &idle_all ? *idle : *busy;
      all->miss_ms.insert(all->miss_ms.end(), one.miss_ms.begin(), one.miss_ms.end());
      all->hit_ms.insert(all->hit_ms.end(), one.hit_ms.begin(), one.hit_ms.end());
    }
    DaemonStatus::Fleet& f = fleet_all.fleet;
    f.compiled += busy->fleet.compiled;
    f.cached += busy->fleet.cached;
    f.failed += busy->fleet.failed;
    f.dropped += busy->fleet.dropped;
    f.queued += busy->fleet.queued;
    f.yielded += busy->fleet.yielded;
    if (!busy->fleet.last_failure.empty()) f.last_failure = busy->fleet.last_failure;
  }

  std::printf("every round's samples together:\n");
  std::printf("%-6s %8s %10s %10s %10s %10s  %s\n", "", "samples", "idle p50", "fleet p50", "idle p99", "fleet p99",
              "p50 x / p99 x");
  auto row = [&](const char* what, const std::vector<double>& a, const std::vector<double>& b) {
    const double a50 = median(a), b50 = median(b), a99 = percentile(a, 99), b99 = percentile(b, 99);
    std::printf("%-6s %8zu %7.3f ms %7.3f ms %7.3f ms %7.3f ms  %.2fx / %.2fx\n", what, b.size(), a50, b50, a99, b99,
                ratio(b50, a50), ratio(b99, a99));
  };
  row("miss", idle_all.miss_ms, fleet_all.miss_ms);
  row("hit", idle_all.hit_ms, fleet_all.hit_ms);
  const DaemonStatus::Fleet& f = fleet_all.fleet;
  std::printf("background: %llu compiled, %llu already cached, %llu failed, %llu dropped, %llu queued at the ends, "
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
  int workers = 4, misses = 20, window_ms = 300, rounds = 3;
  bool heavy_builds = false;
  app.add_option("--targets", targets, "the fleet's other targets, comma separated (cuda:90 is the client's)");
  app.add_option("--workers", workers, "compile workers of every daemon")->check(CLI::Range(2, 64));
  app.add_option("--misses", misses, "misses per daemon and round")->check(CLI::Range(1, 100000));
  app.add_option("--rounds", rounds, "rounds of both daemons, which goes first alternating")
      ->check(CLI::Range(1, 1000));
  app.add_option("--hit-window-ms", window_ms, "how long hits are measured after each miss")
      ->check(CLI::Range(1, 600000));
  std::string kjitd;
  app.add_flag("--heavy-builds", heavy_builds,
               "each round first compiles a new CUB kernel, whose fleet builds run during the measured miss and hits");
  app.add_option("--kjitd", kjitd, "the kjitd to run (default: this build's); a copy is safe from relinks");
  CLI11_PARSE(app, argc, argv);
  return kjit::bench::run(targets, workers, misses, window_ms, rounds, heavy_builds, kjitd);
}
