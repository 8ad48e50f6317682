// kjitd's Prometheus metrics through a real daemon: a compile and its memory
// hit, then a scrape of --metrics-port over HTTP shows the request, the
// compile, the hit and the worker that ran it.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/llvm_kernels.h"
#include "support/loopback.h"

namespace kjit::test {
namespace {

using Labels = std::map<std::string, std::string>;

// GET /metrics: the body, or "" when the answer is not a 200.
std::string scrape(uint16_t port) {
  auto [status, body] = http_get(port, "/metrics");
  return status.find(" 200 ") == std::string::npos ? std::string() : body;
}

// The sum over every sample of `name` whose labels include `labels`; -1
// when there is none.
double total(const std::string& text, const std::string& name, const Labels& labels = {}) {
  double sum = -1;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (line.substr(0, std::min(brace, space)) != name) continue;
    Labels found;
    if (brace != std::string::npos) {
      std::istringstream pairs(line.substr(brace + 1, line.rfind('}') - brace - 1));
      std::string pair;
      while (std::getline(pairs, pair, ',')) {
        const size_t eq = pair.find('=');
        if (eq != std::string::npos) found[pair.substr(0, eq)] = pair.substr(eq + 2, pair.size() - eq - 3);
      }
    }
    bool matches = true;
    for (const auto& [key, value] : labels) matches = matches && found.count(key) && found[key] == value;
    if (!matches) continue;
    sum = (sum < 0 ? 0 : sum) + std::stod(line.substr(space + 1));
  }
  return sum;
}

TEST(DaemonMetrics, ACompileAndItsMemoryHitShowInAScrape) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--metrics-port", std::to_string(port)});
  ASSERT_TRUE(daemon.status());
  Client client(daemon.socket_path());
  auto compiled = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  auto hit = client.compile(llvm_request(k_llvm_vadd, "cuda:90"));
  ASSERT_TRUE(hit) << hit.error().message;

  const std::string text = scrape(port);
  ASSERT_FALSE(text.empty()) << "no metrics on 127.0.0.1:" << port;
  EXPECT_GE(total(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}}), 2) << text;
  EXPECT_GE(total(text, "kjit_request_duration_seconds_count", {{"method", "Compile"}}), 2) << text;
  EXPECT_GE(total(text, "kjit_compile_duration_seconds_count", {{"result", "ok"}}), 1) << text;
  EXPECT_GE(total(text, "kjit_cache_hits_total", {{"tier", "memory"}}), 1) << text;
  EXPECT_GE(total(text, "kjit_cache_hit_duration_seconds_count", {{"tier", "memory"}}), 1) << text;
  EXPECT_GE(total(text, "kjit_compiles_total"), 1) << text;
  EXPECT_GE(total(text, "kjit_worker_starts_total"), 1) << text;
  EXPECT_EQ(total(text, "kjit_worker_crashes_total"), 0) << text;
  EXPECT_EQ(total(text, "kjit_draining"), 0) << text;
}

TEST(DaemonMetrics, ARefusedRequestIsCountedUnderItsCodesName) {
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--metrics-port", std::to_string(port)});
  ASSERT_TRUE(daemon.status());
  auto refused = Client(daemon.socket_path()).compile(llvm_request(k_llvm_vadd, "cuda:no-such-arch"));
  ASSERT_FALSE(refused);
  ASSERT_EQ(refused.error().code, ErrorCode::invalid_argument) << refused.error().message;

  const std::string text = scrape(port);
  ASSERT_FALSE(text.empty()) << "no metrics on 127.0.0.1:" << port;
  EXPECT_EQ(total(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "INVALID_ARGUMENT"}}), 1) << text;
  EXPECT_EQ(total(text, "kjit_requests_total", {{"method", "Compile"}, {"code", "OK"}}), -1) << text;
  EXPECT_EQ(total(text, "kjit_compile_duration_seconds_count"), 0) << "nothing was compiled:\n" << text;
}

}  // namespace
}  // namespace kjit::test
