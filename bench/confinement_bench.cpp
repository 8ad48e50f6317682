// kjit_bench_confinement: what confining compile workers costs. Cold
// compiles (no cache) of the benchmark kernels on two daemons started the
// same way but for `--sandbox landlock` and `--sandbox off`, interleaved so
// both see the same machine; and the time a new worker takes to be ready in
// each mode. Prints tables; asserts nothing about timings.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "bench_options.h"
#include "kjit/client.h"
#include "sample_stats.h"
#include "support/daemon_process.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

constexpr int k_default_reps = 9;
constexpr int k_worker_starts = 7;  // daemons started per mode for the start-time figure
constexpr double k_target_ratio = 1.02;

CompileRequest request_for(const BenchKernel& kernel) {
  CompileRequest request;
  request.input = kernel.source;
  request.input_name = kernel.name + ".cu";
  request.target = "cuda:90";
  request.name_expressions = kernel.name_expressions;
  return request;
}

Result<std::unique_ptr<test::DaemonProcess>> start_daemon(const std::string& sandbox) {
  // One worker: every compile after the first runs in the same, ready worker.
  Result<std::unique_ptr<test::DaemonProcess>> daemon =
      test::DaemonProcess::start({{"--no-cache", "--sandbox", sandbox, "--compile-workers", "1"}});
  if (!daemon) return in_context("kjitd --sandbox " + sandbox, daemon.error());
  return daemon;
}

// Milliseconds of one compile as the client sees it.
Result<double> timed_compile(const Client& client, const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  Result<CompileResult> result = client.compile(request);
  if (!result) return result.error();
  return ms_since(start);
}

Status run(const BenchOptions& options) {
  const int reps = options.reps;
  const std::vector<std::string> modes = {"off", "landlock"};
  std::vector<std::unique_ptr<test::DaemonProcess>> daemons;
  for (const std::string& mode : modes) {
    auto daemon = start_daemon(mode);
    if (!daemon) return daemon.error();
    daemons.push_back(std::move(daemon.value()));
  }
  std::vector<Client> clients;
  for (const auto& daemon : daemons) clients.emplace_back(daemon->socket_path());

  const std::vector<BenchKernel> kernels = bench_kernels();
  // Warm-up: each daemon starts its worker and loads the toolchains.
  for (const Client& client : clients)
    if (auto warm = timed_compile(client, request_for(kernels.front())); !warm)
      return in_context("warm-up compile", warm.error());

  std::printf("Cold compiles (--no-cache), client-side ms, median of %d, cuda:90, one worker each\n\n", reps);
  TextTable table({"kernel", "sandbox off", "landlock", "ratio"});
  double sum_off = 0, sum_confined = 0;
  for (const BenchKernel& kernel : kernels) {
    std::vector<std::vector<double>> samples(modes.size());
    const CompileRequest request = request_for(kernel);
    for (int r = 0; r < reps; ++r) {
      for (size_t m = 0; m < modes.size(); ++m) {
        // Alternate which mode goes first, so neither always follows the other.
        const size_t which = (m + static_cast<size_t>(r)) % modes.size();
        Result<double> ms = timed_compile(clients[which], request);
        if (!ms) return in_context(kernel.name + " on --sandbox " + modes[which], ms.error());
        samples[which].push_back(*ms);
      }
    }
    const double off = median(samples[0]), confined = median(samples[1]);
    sum_off += off;
    sum_confined += confined;
    table.add_row({kernel.name, fixed(off, 1), fixed(confined, 1), fixed(confined / off, 3)});
  }
  table.add_row({"all (sum of medians)", fixed(sum_off, 1), fixed(sum_confined, 1), fixed(sum_confined / sum_off, 3)});
  table.print();
  std::printf("\ntarget: landlock / off <= %.2f -> %s\n\n", k_target_ratio,
              sum_confined / sum_off <= k_target_ratio ? "met" : "NOT met");
  daemons.clear();

  std::printf("Worker start (spawn to ready: toolchains and plugins loaded, confined, bounded), ms, %d daemons each\n\n",
              k_worker_starts);
  TextTable starts({"sandbox", "median", "min", "max"});
  std::vector<double> medians;
  for (const std::string& mode : modes) {
    std::vector<double> ms;
    for (int i = 0; i < k_worker_starts; ++i) {
      auto daemon = start_daemon(mode);
      if (!daemon) return daemon.error();
      Client client((*daemon)->socket_path());
      if (auto compiled = timed_compile(client, request_for(trivial_kernel())); !compiled)
        return in_context("first compile on --sandbox " + mode, compiled.error());
      Result<DaemonStatus> status = client.status();
      if (!status) return in_context("status of --sandbox " + mode, status.error());
      ms.push_back(status->last_worker_start_ms);
    }
    medians.push_back(median(ms));
    starts.add_row({mode, fixed(median(ms), 1), fixed(percentile(ms, 0), 1), fixed(percentile(ms, 100), 1)});
  }
  starts.print();
  std::printf("\nratio landlock / off: %.3f\n", medians[1] / medians[0]);
  return Ok{};
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  return kjit::bench::bench_main(argc, argv, "kjit_bench_confinement",
                                 "kjit_bench_confinement: the cost of confined workers", kjit::bench::k_default_reps,
                                 kjit::bench::run);
}
