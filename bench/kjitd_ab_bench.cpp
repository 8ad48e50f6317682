// kjit_bench_ab: one kjitd against another (a build of an earlier revision,
// say) on the paths a restructuring must leave as fast as they were: a
// memory hit, a disk hit and a cold compile's overhead. Both daemons run at
// once and every sample is a pair taken back to back, A then B or B then A
// in turn, so a noisy machine slows both sides of a ratio alike.
//
//   kjit_bench_ab --before /path/to/old/kjitd [--after /path/to/kjitd] [--pairs 400]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "sample_stats.h"
#include "timed_compile.h"
#include "kjit/client.h"
#include "support/child_process.h"
#include "support/daemon_process.h"

namespace kjit::bench {
namespace {

struct Side {
  std::string label;
  std::unique_ptr<test::DaemonProcess> daemon;
  std::unique_ptr<Client> client;
};

Result<Side> start(const std::string& label, const std::string& kjitd, std::vector<std::string> flags) {
  test::DaemonOptions options{std::move(flags)};
  options.kjitd = kjitd;
  // An earlier kjitd may not know --no-triton-prestart; one that does runs
  // without the prestart, as the earlier one did.
  options.triton_prestart = test::run_command({kjitd, "--help"}).out.find("--no-triton-prestart") == std::string::npos;
  options.deadline = std::chrono::seconds(60);
  Result<std::unique_ptr<test::DaemonProcess>> daemon = test::DaemonProcess::start(std::move(options));
  if (!daemon) return daemon.error();
  Side side{label, std::move(daemon.value()), nullptr};
  side.client = std::make_unique<Client>(side.daemon->socket_path());
  return side;
}


struct Row {
  std::string what;
  double before_ms = 0, after_ms = 0;
};

// pairs samples of probe on each side, alternating which goes first.
Result<Row> paired(const std::string& what, Side& before, Side& after, int pairs,
                   const std::function<Result<double>(Side&, int)>& probe) {
  std::vector<double> a, b;
  for (int i = 0; i < pairs; ++i) {
    Side& first = i % 2 ? after : before;
    Side& second = i % 2 ? before : after;
    Result<double> x = probe(first, i);
    if (!x) return x.error();
    Result<double> y = probe(second, i);
    if (!y) return y.error();
    (i % 2 ? b : a).push_back(*x);
    (i % 2 ? a : b).push_back(*y);
  }
  return Row{what, median(a), median(b)};
}

int run(const std::string& before_kjitd, const std::string& after_kjitd, int pairs) {
  std::vector<Row> rows;
  auto fail = [](const std::string& where, const Error& error) {
    std::fprintf(stderr, "kjit_bench_ab: %s: %s\n", where.c_str(), error.message.c_str());
    return 1;
  };
  {
    Result<Side> before = start("before", before_kjitd, {});
    if (!before) return fail("starting the 'before' kjitd", before.error());
    Result<Side> after = start("after", after_kjitd, {});
    if (!after) return fail("starting the 'after' kjitd", after.error());
    const CompileRequest hot = saxpy_request("hot");
    for (Side* side : {&*before, &*after})
      if (Result<double> warm = timed_compile(*side->client, hot, "compiled"); !warm)
        return fail("the first compile on " + side->label, warm.error());
    Result<Row> memory = paired("memory hit", *before, *after, pairs, [&](Side& side, int) {
      return timed_compile(*side.client, hot, "memory");
    });
    if (!memory) return fail("memory hits", memory.error());
    rows.push_back(*memory);
    // Every cold compile is a new key: the same kernel with another comment.
    Result<Row> cold = paired("cold compile (saxpy, NVRTC + nvJitLink)", *before, *after, std::max(6, pairs / 40),
                              [&](Side& side, int i) {
                                return timed_compile(*side.client,
                                                     saxpy_request(side.label + " cold " + std::to_string(i)),
                                                     "compiled");
                              });
    if (!cold) return fail("cold compiles", cold.error());
    rows.push_back(*cold);
  }
  {
    // Without a memory tier, every hit is read from disk.
    const std::vector<std::string> disk_only = {"--memory-cache-bytes", "0"};
    Result<Side> before = start("before", before_kjitd, disk_only);
    if (!before) return fail("starting the 'before' kjitd on disk alone", before.error());
    Result<Side> after = start("after", after_kjitd, disk_only);
    if (!after) return fail("starting the 'after' kjitd on disk alone", after.error());
    const CompileRequest hot = saxpy_request("disk");
    for (Side* side : {&*before, &*after})
      if (Result<double> warm = timed_compile(*side->client, hot, "compiled"); !warm)
        return fail("the first compile on " + side->label, warm.error());
    Result<Row> disk = paired("disk hit", *before, *after, pairs, [&](Side& side, int) {
      return timed_compile(*side.client, hot, "disk");
    });
    if (!disk) return fail("disk hits", disk.error());
    rows.push_back(*disk);
  }
  std::printf("== kjitd after vs before: median ms of %d interleaved pairs (cold compiles: fewer) ==\n", pairs);
  std::printf("%-42s %12s %12s %8s\n", "", "before", "after", "ratio");
  for (const Row& row : rows)
    std::printf("%-42s %12.3f %12.3f %7.2fx\n", row.what.c_str(), row.before_ms, row.after_ms,
                row.after_ms / row.before_ms);
  return 0;
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  CLI::App app{"kjit_bench_ab: one kjitd against another, memory hits, disk hits and cold compiles"};
  std::string before, after = kjit::test::kjitd_path();
  int pairs = 400;
  app.add_option("--before", before, "the kjitd to compare against")->required()->check(CLI::ExistingFile);
  app.add_option("--after", after, "the kjitd measured (default: this build's)")->check(CLI::ExistingFile);
  app.add_option("--pairs", pairs, "pairs of hits per row")->check(CLI::Range(10, 100000));
  CLI11_PARSE(app, argc, argv);
  return kjit::bench::run(before, after, pairs);
}
