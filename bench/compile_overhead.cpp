// kjit_bench_compile: what compiling through kjitd costs next to calling NVRTC
// and nvJitLink in-process, and what the socket round trip itself costs.
// Prints tables; it asserts nothing about timings (a benchmark is a
// program that prints a table). Exits 1 only when something fails outright.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels.h"
#include "bench_options.h"
#include "direct_compiler.h"
#include "kjit/client.h"
#include "sample_stats.h"
#include "support/daemon_process.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

constexpr int k_default_reps = 15;
constexpr int k_health_calls = 2000;
constexpr int k_refused_calls = 500;
constexpr int k_cli_runs = 30;
constexpr int k_trivial_reps = 50;
constexpr double k_target_ratio = 1.10;
constexpr unsigned k_sm = 90;
constexpr std::string_view k_target = "cuda:90";

// Everything measured for one kernel, one entry per repetition.
struct KernelSamples {
  std::vector<double> direct_ms, direct_nvrtc_ms, direct_nvjitlink_ms;
  std::vector<double> kjitd_ms, server_ms, client_minus_server_ms;
  std::vector<double> server_nvrtc_ms, server_nvjitlink_ms, server_metadata_ms, server_other_ms;
};

CompileRequest request_for(const BenchKernel& kernel) {
  CompileRequest request;
  request.input_kind = InputKind::cuda_source;
  request.input = kernel.source;
  request.input_name = kernel.name + ".cu";
  request.target = std::string(k_target);
  request.name_expressions = kernel.name_expressions;
  return request;
}

double stage_ms(const CompileResult& result, std::string_view stage) {
  double total = 0;
  for (const StageTiming& timing : result.timings)
    if (timing.stage == stage) total += timing.ms;
  return total;
}

// One compile each way, outside the measurements: the first NVRTC and
// nvJitLink calls in a process load and initialise the compilers (the first
// nvJitLink call takes far longer than the rest). The result says whether
// both sides produced the same cubin, i.e. did the same work.
Result<bool> warm_up(const DirectCompiler& direct, const Client& client, const BenchKernel& kernel) {
  Result<DirectCompileOutput> local = direct.compile(kernel);
  if (!local) return in_context("direct compile of " + kernel.name, local.error());
  Result<CompileResult> remote = client.compile(request_for(kernel));
  if (!remote) return in_context("kjitd compile of " + kernel.name, remote.error());
  if (remote->lowered_names != local->lowered_names)
    return make_error(ErrorCode::internal, "kjitd compile of " + kernel.name + ": lowered names differ from NVRTC's");
  return remote->artifact == local->cubin;
}

Status time_direct(const DirectCompiler& direct, const BenchKernel& kernel, KernelSamples& samples) {
  auto start = std::chrono::steady_clock::now();
  Result<DirectCompileOutput> out = direct.compile(kernel);
  double ms = ms_since(start);
  if (!out) return in_context("direct compile of " + kernel.name, out.error());
  samples.direct_ms.push_back(ms);
  samples.direct_nvrtc_ms.push_back(out->nvrtc_ms);
  samples.direct_nvjitlink_ms.push_back(out->nvjitlink_ms);
  return Ok{};
}

Status time_kjitd(const Client& client, const CompileRequest& request, KernelSamples& samples) {
  auto start = std::chrono::steady_clock::now();
  Result<CompileResult> out = client.compile(request);
  double ms = ms_since(start);
  if (!out) return in_context("kjitd compile of " + request.input_name, out.error());
  double nvrtc = stage_ms(*out, "nvrtc"), nvjitlink = stage_ms(*out, "nvjitlink"),
         metadata = stage_ms(*out, "metadata");
  samples.kjitd_ms.push_back(ms);
  samples.server_ms.push_back(out->server_ms);
  samples.client_minus_server_ms.push_back(ms - out->server_ms);
  samples.server_nvrtc_ms.push_back(nvrtc);
  samples.server_nvjitlink_ms.push_back(nvjitlink);
  samples.server_metadata_ms.push_back(metadata);
  samples.server_other_ms.push_back(out->server_ms - nvrtc - nvjitlink - metadata);
  return Ok{};
}

// Interleaved so that drift (clock frequency, caches, another process on the
// host) hits both paths alike; the order flips every rep so that neither
// always runs first.
Status time_both(const DirectCompiler& direct, const Client& client, const BenchKernel& kernel,
                 const CompileRequest& request, int rep, KernelSamples& samples) {
  if (rep % 2 == 0)
    if (Status s = time_direct(direct, kernel, samples); !s) return s;
  if (Status s = time_kjitd(client, request, samples); !s) return s;
  if (rep % 2 == 1)
    if (Status s = time_direct(direct, kernel, samples); !s) return s;
  return Ok{};
}

void print_compile_tables(const std::vector<BenchKernel>& kernels, const std::vector<KernelSamples>& samples,
                          const std::vector<bool>& same_cubin, int reps) {
  std::printf("\n== Compile, CUDA C++ -> cubin: median of %d reps (ms) ==\n", reps);
  TextTable table({"kernel", "direct", "kjitd", "kjitd/direct", "server_ms", "kjitd-server", "same cubin"});
  std::vector<double> ratios;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    double ratio = median(s.kjitd_ms) / median(s.direct_ms);
    ratios.push_back(ratio);
    table.add_row({kernels[k].name, fixed(median(s.direct_ms)), fixed(median(s.kjitd_ms)), fixed(ratio),
                   fixed(median(s.server_ms)), fixed(median(s.client_minus_server_ms)), same_cubin[k] ? "yes" : "no"});
  }
  table.print();
  double overall = median(ratios);
  std::printf("\noverall median of kjitd/direct: %.3f   target <= %.2f: %s\n", overall, k_target_ratio,
              overall <= k_target_ratio ? "met" : "NOT met");

  std::printf("\n== Where the time goes: per-stage medians (ms) ==\n");
  TextTable stages({"kernel", "nvrtc direct", "nvrtc kjitd", "nvjitlink direct", "nvjitlink kjitd", "metadata kjitd",
                    "other in server"});
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    stages.add_row({kernels[k].name, fixed(median(s.direct_nvrtc_ms)), fixed(median(s.server_nvrtc_ms)),
                    fixed(median(s.direct_nvjitlink_ms)), fixed(median(s.server_nvjitlink_ms)),
                    fixed(median(s.server_metadata_ms), 3), fixed(median(s.server_other_ms), 3)});
  }
  stages.print();
}

void add_round_trip_row(TextTable& table, const std::string& what, const std::vector<double>& samples) {
  table.add_row({what, std::to_string(samples.size()), fixed(median(samples), 3), fixed(percentile(samples, 99), 3),
                 fixed(percentile(samples, 100), 3)});
}

// Runs a CLI command `runs` times as a whole process; every run must exit 0.
Result<std::vector<double>> time_cli(const std::vector<std::string>& argv, int runs) {
  std::vector<double> samples;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    Result<int> code = test::run_to_exit(argv);
    samples.push_back(ms_since(start));
    if (!code) return code.error();
    if (*code != 0) return make_error(ErrorCode::internal, argv[0] + " exited with code " + std::to_string(*code));
  }
  return samples;
}

Status measure_round_trips(const DirectCompiler& direct, const std::string& socket_path, TextTable& table) {
  // Health on one long-lived client: the connection is set up by the first
  // call, which is left out.
  Client client(socket_path);
  if (Result<std::string> first = client.health(); !first) return in_context("health", first.error());
  std::vector<double> health;
  health.reserve(k_health_calls);
  for (int i = 0; i < k_health_calls; ++i) {
    auto start = std::chrono::steady_clock::now();
    Result<std::string> status = client.health();
    health.push_back(ms_since(start));
    if (!status) return in_context("health", status.error());
  }
  add_round_trip_row(table, "Client::health()", health);

  // A Compile the daemon refuses before any compiler runs (-I is never
  // allowed): the Compile RPC's own cost, to set against health's.
  CompileRequest refused = request_for(trivial_kernel());
  refused.options = {"-I/nonexistent"};
  std::vector<double> refused_ms;
  for (int i = 0; i < k_refused_calls; ++i) {
    auto start = std::chrono::steady_clock::now();
    Result<CompileResult> out = client.compile(refused);
    refused_ms.push_back(ms_since(start));
    if (out || out.error().code != ErrorCode::invalid_argument)
      return make_error(ErrorCode::internal, "kjitd did not refuse -I with invalid_argument");
  }
  add_round_trip_row(table, "Compile refused (-I)", refused_ms);

  // The CLI as a user meets it: process start, gRPC init, connect, one call.
  // `--help` is the same binary making no call: what starting it costs.
  Result<std::vector<double>> cli = time_cli({test::kjit_cli_path(), "health", "--socket", socket_path}, k_cli_runs);
  if (!cli) return in_context("kjit health", cli.error());
  add_round_trip_row(table, "`kjit health` process", *cli);
  Result<std::vector<double>> no_rpc = time_cli({test::kjit_cli_path(), "--help"}, k_cli_runs);
  if (!no_rpc) return in_context("kjit --help", no_rpc.error());
  add_round_trip_row(table, "`kjit --help` process", *no_rpc);

  // A kernel with nothing in it: the fixed cost of every compile.
  BenchKernel noop = trivial_kernel();
  CompileRequest request = request_for(noop);
  if (Result<bool> warm = warm_up(direct, client, noop); !warm) return warm.error();
  KernelSamples s;
  for (int rep = 0; rep < k_trivial_reps; ++rep)
    if (Status status = time_both(direct, client, noop, request, rep, s); !status) return status;
  add_round_trip_row(table, "Compile noop: direct", s.direct_ms);
  add_round_trip_row(table, "Compile noop: kjitd", s.kjitd_ms);
  add_round_trip_row(table, "Compile noop: server_ms", s.server_ms);
  add_round_trip_row(table, "Compile noop: kjitd-server", s.client_minus_server_ms);
  return Ok{};
}

Status run(const BenchOptions& options) {
  auto bench_start = std::chrono::steady_clock::now();
  std::printf("kjit_bench_compile: kjitd vs in-process NVRTC + nvJitLink\n");
  std::printf("toolkit: %s  NVRTC %s, nvJitLink %s; target %s (-arch=compute_%u, then sm_%u)\n",
              test::cuda_home().c_str(), DirectCompiler::nvrtc_version().c_str(),
              DirectCompiler::nvjitlink_version().c_str(), std::string(k_target).c_str(), k_sm, k_sm);
  std::printf("reps: %d per kernel and path, order alternating per rep, after one warm-up each; host CPUs: %ld\n",
              options.reps, sysconf(_SC_NPROCESSORS_ONLN));
  std::fflush(stdout);

  // Held here so that kjitd is stopped (and its socket directory removed) on
  // every way out of this function. --no-cache: this measures compiles.
  Result<std::unique_ptr<test::DaemonProcess>> started = test::DaemonProcess::start({{"--no-cache"}});
  if (!started) return in_context("starting kjitd", started.error());
  std::unique_ptr<test::DaemonProcess> daemon = std::move(started.value());
  std::printf("kjitd: serving %.1f ms after spawn (socket %s)\n", daemon->startup_ms(), daemon->socket_path().c_str());
  std::fflush(stdout);

  DirectCompiler direct(test::cuda_home(), k_sm);
  // One client for all compiles, as an application would hold one.
  Client client(daemon->socket_path());
  std::vector<BenchKernel> kernels = bench_kernels();
  std::vector<CompileRequest> requests;
  std::vector<bool> same_cubin;
  for (const BenchKernel& kernel : kernels) {
    requests.push_back(request_for(kernel));
    Result<bool> same = warm_up(direct, client, kernel);
    if (!same) return same.error();
    same_cubin.push_back(*same);
  }

  std::vector<KernelSamples> samples(kernels.size());
  for (int rep = 0; rep < options.reps; ++rep)
    for (size_t k = 0; k < kernels.size(); ++k)
      if (Status s = time_both(direct, client, kernels[k], requests[k], rep, samples[k]); !s) return s;
  print_compile_tables(kernels, samples, same_cubin, options.reps);

  std::printf("\n== Round trips through the socket (ms) ==\n");
  std::fflush(stdout);
  TextTable round_trips({"what", "n", "p50", "p99", "max"});
  if (Status s = measure_round_trips(direct, daemon->socket_path(), round_trips); !s) return s;
  round_trips.print();

  int code = daemon->stop();
  std::printf("\nkjitd exited with code %d; bench took %.1f s\n", code, ms_since(bench_start) / 1000);
  return Ok{};
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  return kjit::bench::bench_main(argc, argv, "kjit_bench_compile",
                                 "Compiles a set of CUDA kernels in-process (NVRTC + nvJitLink) and through a kjitd it "
                                 "starts, and prints timing tables.",
                                 kjit::bench::k_default_reps, kjit::bench::run);
}
