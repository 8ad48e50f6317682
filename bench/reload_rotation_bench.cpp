// kjit_bench_reload: what replacing the TCP listener's certificate while
// kjitd serves costs its clients. `--clients` clients call Echo over TLS
// for `--seconds`, each on a connection it keeps and, every fourth call, on
// a new one (a new handshake); once steadily, then while the certificate is
// swapped between two (files replaced, SIGHUP) every `--rotate-ms`. Prints
// the calls, the failed calls and the latencies of both runs, and p99 with
// rotation over p99 without as a ratio. Certificates are made for the run
// with openssl. Exits 1 when a call failed or the certificate never changed.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sample_stats.h"
#include "support/daemon_process.h"
#include "support/loopback.h"
#include "support/test_certificates.h"
#include "support/tls_channels.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  std::vector<double> all_ms, fresh_ms;  // every call's latency; those on a new connection
  int failed = 0;
  int rotations = 0;
  std::vector<std::string> names_seen;  // certificates new connections were given
  std::string first_error;
};

struct Setup {
  int clients = 16;
  int seconds = 30;
  int rotate_ms = 1000;
};

class RotationBench {
 public:
  explicit RotationBench(test::TestCertificates& certificates) : certificates_(certificates) {}

  void serve(const std::string& name) {
    fs::copy_file(certificates_.file(name + ".crt"), certificates_.file("served.crt"),
                  fs::copy_options::overwrite_existing);
    fs::copy_file(certificates_.file(name + ".key"), certificates_.file("served.key"),
                  fs::copy_options::overwrite_existing);
  }

  RunResult run(test::DaemonProcess& daemon, const std::string& address, const Setup& setup, bool rotate) {
    const std::string ca = test::read_file(certificates_.file("ca.crt"));
    RunResult result;
    std::mutex mutex;
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int c = 0; c < setup.clients; ++c)
      clients.emplace_back([&] {
        std::vector<double> all, fresh;
        std::vector<std::string> names;
        int failed = 0;
        std::string error;
        std::shared_ptr<grpc::Channel> kept = test::fresh_tls_channel(address, ca);
        for (int i = 0; !stop; ++i) {
          const bool new_connection = i % 4 == 0;
          const auto start = std::chrono::steady_clock::now();
          test::EchoOutcome outcome =
              test::echo_on(new_connection ? test::fresh_tls_channel(address, ca) : kept, std::chrono::seconds(10));
          const double ms = ms_since(start);
          if (!outcome.ok) {
            if (error.empty()) error = outcome.error;
            ++failed;
            continue;
          }
          all.push_back(ms);
          if (!new_connection) continue;
          fresh.push_back(ms);
          if (std::find(names.begin(), names.end(), outcome.common_name) == names.end())
            names.push_back(outcome.common_name);
        }
        std::lock_guard lock(mutex);
        result.all_ms.insert(result.all_ms.end(), all.begin(), all.end());
        result.fresh_ms.insert(result.fresh_ms.end(), fresh.begin(), fresh.end());
        result.failed += failed;
        if (result.first_error.empty()) result.first_error = error;
        for (const std::string& name : names)
          if (std::find(result.names_seen.begin(), result.names_seen.end(), name) == result.names_seen.end())
            result.names_seen.push_back(name);
      });
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(setup.seconds);
    bool b = false;
    while (std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rotate ? setup.rotate_ms : 100));
      if (!rotate) continue;
      b = !b;
      serve(b ? "b" : "a");
      daemon.signal(SIGHUP);
      ++result.rotations;
    }
    stop = true;
    for (std::thread& client : clients) client.join();
    return result;
  }

 private:
  test::TestCertificates& certificates_;
};

std::string ms(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  using namespace kjit;
  using namespace kjit::bench;
  Setup setup;
  CLI::App app{"TLS calls while kjitd's listener certificate is replaced (SIGHUP), against none replaced"};
  app.add_option("--clients", setup.clients, "clients calling at once")->check(CLI::Range(1, 256));
  app.add_option("--seconds", setup.seconds, "length of each run")->check(CLI::Range(1, 3600));
  app.add_option("--rotate-ms", setup.rotate_ms, "time between two replacements")->check(CLI::Range(100, 600000));
  CLI11_PARSE(app, argc, argv);

  test::TestCertificates certificates;
  for (const char* name : {"a", "b"})
    if (Status s = certificates.status() ? certificates.make_server(name, std::string("kjitd-") + name)
                                         : certificates.status();
        !s) {
      std::fprintf(stderr, "kjit_bench_reload: %s\n", s.error().message.c_str());
      return 1;
    }
  RotationBench bench(certificates);
  bench.serve("a");
  const std::string address = "127.0.0.1:" + std::to_string(test::free_loopback_port());
  test::DaemonProcess daemon(
      test::DaemonOptions{{"--listen", address, "--tls-cert", certificates.file("served.crt"), "--tls-key",
                           certificates.file("served.key"), "--no-cache", "--compile-workers", "0"}});
  if (!daemon.status()) {
    std::fprintf(stderr, "kjit_bench_reload: %s\n", daemon.status().error().message.c_str());
    return 1;
  }
  std::printf("%d clients for %d s each run, a new connection every 4th call; rotation every %d ms\n\n", setup.clients,
              setup.seconds, setup.rotate_ms);
  const RunResult steady = bench.run(daemon, address, setup, false);
  const RunResult rotating = bench.run(daemon, address, setup, true);

  TextTable table({"run", "calls", "failed", "rotations", "p50 ms", "p99 ms", "p99 new conn ms", "certificates seen"});
  for (const auto& [name, r] : {std::pair<const char*, const RunResult&>{"steady", steady}, {"rotating", rotating}}) {
    std::string seen;
    for (const std::string& cn : r.names_seen) seen += (seen.empty() ? "" : " ") + cn;
    table.add_row({name, std::to_string(r.all_ms.size() + static_cast<size_t>(r.failed)), std::to_string(r.failed),
                   std::to_string(r.rotations), ms(percentile(r.all_ms, 50)), ms(percentile(r.all_ms, 99)),
                   ms(percentile(r.fresh_ms, 99)), seen});
  }
  table.print();
  const double ratio = percentile(rotating.all_ms, 99) / std::max(percentile(steady.all_ms, 99), 1e-9);
  const double fresh_ratio = percentile(rotating.fresh_ms, 99) / std::max(percentile(steady.fresh_ms, 99), 1e-9);
  std::printf("\np99 rotating / steady: %.2fx (new connections alone: %.2fx); failed calls: %d steady, %d rotating\n",
              ratio, fresh_ratio, steady.failed, rotating.failed);
  if (!rotating.first_error.empty() || !steady.first_error.empty())
    std::printf("first failure: %s\n", (rotating.first_error.empty() ? steady : rotating).first_error.c_str());
  const bool rotated = rotating.names_seen.size() >= 2;
  if (!rotated) std::printf("new connections never got the other certificate\n");
  return steady.failed + rotating.failed == 0 && rotated ? 0 : 1;
}
