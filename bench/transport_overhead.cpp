// kjit_bench_transport: what TLS and token checking add to a memory hit.
// One kjitd with tenants serves the same kernel over its unix socket and
// over a TLS listener; the client asks for it from the cache in interleaved
// rounds over (1) the socket as the local operator, (2) the socket with a
// tenant's token, (3) TLS with the token, and prints the medians, p99 and
// the ratios against (1). Certificates are made for the run with openssl.
// Exits 1 only when something fails outright.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "bench_options.h"
#include "kjit/client.h"
#include "pipeline/cache_key.h"
#include "sample_stats.h"
#include "support/daemon_process.h"
#include "support/loopback.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

constexpr int k_default_rounds = 20;
constexpr int k_hits_per_round = 100;


// A CA and a server certificate for 127.0.0.1, with the openssl CLI.
bool make_certificates(const std::string& dir) {
  const std::string commands =
      "cd '" + dir + "' && "
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kjit-bench-ca -keyout ca.key -out ca.pem && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr && "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext "
      "-out server.pem";
  return std::system(("(" + commands + ") >/dev/null 2>&1").c_str()) == 0;
}

CompileRequest hit_request() {
  const BenchKernel kernel = bench_kernels().front();
  CompileRequest request;
  request.input_kind = InputKind::cuda_source;
  request.input = kernel.source;
  request.input_name = kernel.name + ".cu";
  request.target = "cuda:90";
  request.name_expressions = kernel.name_expressions;
  return request;
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  using namespace kjit;
  using namespace kjit::bench;
  int exit_code = 0;
  std::optional<BenchOptions> options = parse_bench_options(
      argc, argv, "memory hits over the unix socket, with a token, and over TLS with a token", k_default_rounds,
      exit_code);
  if (!options) return exit_code;
  const int rounds = options->reps;
  char dir_template[] = "/tmp/kjit-bench-transport-XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (!dir || !make_certificates(dir)) {
    std::fprintf(stderr, "kjit_bench_transport: cannot make certificates with openssl in %s\n", dir ? dir : "/tmp");
    return 1;
  }
  const std::string token = "bench-tenant-token";
  std::ofstream(std::string(dir) + "/tenants.toml")
      << "[[tenants]]\nname = \"bench\"\ntoken_sha256 = \"" << sha256_hex(token) << "\"\n";
  const std::string address = "127.0.0.1:" + std::to_string(test::free_loopback_port());
  test::DaemonProcess daemon(test::DaemonOptions{{"--tenants", std::string(dir) + "/tenants.toml", "--listen", address,
                                                  "--tls-cert", std::string(dir) + "/server.pem", "--tls-key",
                                                  std::string(dir) + "/server.key"}});
  if (!daemon.status()) {
    std::fprintf(stderr, "kjit_bench_transport: %s\n", daemon.status().error().message.c_str());
    return 1;
  }
  ClientOptions with_token;
  with_token.token = token;
  ClientOptions over_tls = with_token;
  over_tls.tls_ca_file = std::string(dir) + "/ca.pem";
  struct Path {
    const char* name;
    Client client;
    std::vector<double> ms;
  };
  std::vector<Path> paths;
  paths.push_back({"unix socket, local operator", Client(daemon.socket_path()), {}});
  paths.push_back({"unix socket, tenant token", Client(daemon.socket_path(), with_token), {}});
  paths.push_back({"TLS (TCP loopback), tenant token", Client(address, over_tls), {}});

  const CompileRequest request = hit_request();
  // The entry in each namespace, and the connections up, before measuring.
  for (Path& path : paths) {
    for (int i = 0; i < 3; ++i) {
      Result<CompileResult> warm = path.client.compile(request);
      if (!warm) {
        std::fprintf(stderr, "kjit_bench_transport: %s: %s\n", path.name, warm.error().message.c_str());
        return 1;
      }
    }
  }
  for (int round = 0; round < rounds; ++round) {
    for (Path& path : paths) {
      for (int i = 0; i < k_hits_per_round; ++i) {
        const auto start = std::chrono::steady_clock::now();
        Result<CompileResult> hit = path.client.compile(request);
        path.ms.push_back(ms_since(start));
        if (!hit || hit->cache != "memory") {
          std::fprintf(stderr, "kjit_bench_transport: %s: not a memory hit\n", path.name);
          return 1;
        }
      }
    }
  }
  const double baseline = median(paths.front().ms);
  TextTable table({"path", "memory hit median ms", "p99 ms", "vs socket"});
  auto fixed = [](double value, const char* format) {
    char text[32];
    std::snprintf(text, sizeof(text), format, value);
    return std::string(text);
  };
  for (const Path& path : paths)
    table.add_row({path.name, fixed(median(path.ms), "%.3f"), fixed(percentile(path.ms, 99), "%.3f"),
                   fixed(median(path.ms) / baseline, "%.2fx")});
  std::printf("Memory hits of one kernel, %d rounds x %d hits per path, interleaved (one process, one daemon)\n",
              rounds, k_hits_per_round);
  table.print();
  daemon.stop();
  std::system(("rm -rf '" + std::string(dir) + "'").c_str());
  return 0;
}
