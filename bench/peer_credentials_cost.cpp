// kjit_bench_peer_credentials: what knowing who calls on the unix socket
// adds to a memory hit, measured in one run.
//
// kjitd reads a connection's credentials (SO_PEERCRED, SO_PEERGROUPS) and
// decides who it is once, when it accepts the connection; each call then
// only looks the connection up (the peer gRPC names, "fd:N", in a map).
// This times, in this process: a memory hit through a real kjitd; the
// per-call lookup on a registry of 64 connections; and the per-connection
// work (reading the credentials of a socketpair and deciding the user). It
// prints the hit with the lookup added as a ratio of the hit alone.
//
//   kjit_bench_peer_credentials [--hits 2000]
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "kjit/client.h"
#include "sample_stats.h"
#include "server/access/local_users.h"
#include "server/access/peer_credentials.h"
#include "support/daemon_process.h"

namespace kjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

int run(int hits) {
  Result<std::unique_ptr<test::DaemonProcess>> daemon = test::DaemonProcess::start(test::DaemonOptions{});
  if (!daemon) {
    std::fprintf(stderr, "kjitd: %s\n", daemon.error().message.c_str());
    return 1;
  }
  Client client((*daemon)->socket_path());
  const BenchKernel kernel = bench_kernels()[1];
  CompileRequest request;
  request.input = kernel.source;
  request.input_name = kernel.name + ".cu";
  request.target = "cuda:90";
  if (Result<CompileResult> first = client.compile(request); !first) {
    std::fprintf(stderr, "compile: %s\n", first.error().message.c_str());
    return 1;
  }
  std::vector<double> hit_ms;
  for (int i = 0; i < hits; ++i) {
    const auto start = Clock::now();
    Result<CompileResult> hit = client.compile(request);
    hit_ms.push_back(ms_since(start));
    if (!hit || hit->cache != "memory") {
      std::fprintf(stderr, "expected a memory hit\n");
      return 1;
    }
  }

  // Per call: the peer's name as gRPC hands it over (a string) and the lookup.
  PeerRegistry registry;
  Result<std::shared_ptr<const LocalUserPolicy>> policy =
      LocalUserPolicy::make(LocalUserPolicy::Options{.daemon_uid = static_cast<uint32_t>(::geteuid())});
  if (!policy) return 1;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
  Result<PeerCredentials> credentials = read_peer_credentials(pair[0]);
  if (!credentials) return 1;
  for (int fd = 100; fd < 164; ++fd) registry.record(fd, (*policy)->decide(*credentials));
  constexpr int k_lookups = 1'000'000;
  size_t found = 0;
  const auto lookups_start = Clock::now();
  for (int i = 0; i < k_lookups; ++i) {
    const std::string peer = PeerRegistry::peer_name(100 + i % 64);
    found += registry.find(peer) != nullptr;
  }
  const double lookup_us = ms_since(lookups_start) * 1e3 / k_lookups;

  // Per connection: the credentials and the decision.
  constexpr int k_accepts = 20'000;
  const auto accepts_start = Clock::now();
  for (int i = 0; i < k_accepts; ++i) {
    Result<PeerCredentials> read = read_peer_credentials(pair[0]);
    found += read && (*policy)->decide(*read) != nullptr;
  }
  const double accept_us = ms_since(accepts_start) * 1e3 / k_accepts;
  ::close(pair[0]);
  ::close(pair[1]);

  const double hit_us = median(hit_ms) * 1e3;
  std::printf("memory hit through kjitd (median of %d):       %8.1f us\n", hits, hit_us);
  std::printf("per call: peer name + lookup (64 connections): %8.3f us\n", lookup_us);
  std::printf("per connection: SO_PEERCRED + decide:           %8.3f us\n", accept_us);
  std::printf("hit with the per-call lookup / hit alone:       %8.4fx (target <= 1.02x)\n",
              (hit_us + lookup_us) / hit_us);
  return found > 0 ? 0 : 1;
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  CLI::App app{"what peer credentials add to a memory hit"};
  int hits = 2000;
  app.add_option("--hits", hits, "memory hits to time")->check(CLI::Range(10, 1'000'000));
  CLI11_PARSE(app, argc, argv);
  return kjit::bench::run(hits);
}
