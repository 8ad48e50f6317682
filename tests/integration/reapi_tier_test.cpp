// The REAPI tier through real daemons and a real REAPI server (BuildGrid):
// two daemons with no Redis sharing only the store (the second compiles
// nothing the first compiled, finds its recipes and its clients' blobs), the server down
// (compiles go on, counted) and back, and what `kjit health --verbose` says.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kjit/client.h"
#include "support/buildgrid_server.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

using namespace std::chrono_literals;

const CacheTierStats* tier_of(const CacheStats& stats, const std::string& name) {
  for (const CacheTierStats& tier : stats.tiers)
    if (tier.tier == name) return &tier;
  return nullptr;
}

class ReapiTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KJIT_SKIP_WITHOUT_TOOLKIT();
    if (std::optional<std::string> why = BuildGridServer::unavailable()) {
      if (std::getenv("CI")) FAIL() << "CI must run the REAPI tests: " << *why;
      GTEST_SKIP() << *why;
    }
    ASSERT_TRUE(server_.start()) << read_file(server_.log_path());
  }

  static CompileRequest request(const std::string& variant) {
    CompileRequest r;
    r.input = std::string(k_vector_add) + "// reapi " + variant + "\n";
    r.target = "cuda:90";
    return r;
  }
  std::vector<std::string> daemon_args(const std::string& name) {
    return {"--cache-dir", temp_.path() + "/" + name, "--reapi", server_.endpoint()};
  }
  // Until the daemon's writes behind its answers have reached the store.
  static bool written(const TestDaemon& daemon, uint64_t puts) {
    return eventually([&] {
      Result<CacheStats> stats = Client(daemon.socket_path()).cache_stats();
      const CacheTierStats* reapi = stats ? tier_of(*stats, "reapi") : nullptr;
      return reapi && reapi->puts >= puts;
    }, 60s, 50ms);
  }

  TempDir temp_;
  BuildGridServer server_;
};

TEST_F(ReapiTierTest, ASecondDaemonWithoutRedisCompilesNothingTheFirstCompiled) {
  TestDaemon a(daemon_args("a")), b(daemon_args("b"));
  Result<CompileResult> compiled = Client(a.socket_path()).compile(request("shared"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_EQ(compiled->cache, "compiled");
  ASSERT_TRUE(written(a, 1)) << "daemon a never wrote its entry to the REAPI store";

  Result<CompileResult> shared = Client(b.socket_path()).compile(request("shared"));
  ASSERT_TRUE(shared) << shared.error().message;
  EXPECT_EQ(shared->cache, "reapi");
  EXPECT_EQ(shared->artifact, compiled->artifact);
  EXPECT_EQ(shared->key, compiled->key);
  Result<CompileResult> again = Client(b.socket_path()).compile(request("shared"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cache, "memory") << "the REAPI hit fills the tiers above";

  Result<CacheStats> stats = Client(b.socket_path()).cache_stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->compiles, 0u);
  const CacheTierStats* reapi = tier_of(*stats, "reapi");
  ASSERT_NE(reapi, nullptr);
  EXPECT_EQ(reapi->hits, 1u);
  EXPECT_EQ(reapi->answered, 1u);

  // Recipes live in the store too: the second daemon (a new node's) lists
  // what the first compiled, so `kjit warm` there builds it for its targets.
  EXPECT_TRUE(eventually([&] {
    Result<std::vector<RecipeSummary>> recipes = Client(b.socket_path()).list_recipes();
    return recipes && !recipes->empty();
  }, 60s, 100ms)) << "the first daemon's recipe is not in the REAPI store";
}

TEST_F(ReapiTierTest, ClientBlobsReachAnotherDaemonThroughTheStore) {
  TestDaemon a(daemon_args("blobs-a")), b(daemon_args("blobs-b"));
  const std::string cubin("\0a cubin Triton compiled", 24);
  ASSERT_TRUE(Client(a.socket_path()).put_blob("triton", "k-reapi", "kernel.cubin", cubin));
  // Written behind the answer: read from the other daemon once it is there.
  std::optional<std::string> got;
  EXPECT_TRUE(eventually([&] {
    Result<std::optional<std::string>> blob = Client(b.socket_path()).get_blob("triton", "k-reapi", "kernel.cubin");
    if (blob && blob->has_value()) got = **blob;
    return got.has_value();
  }, 60s, 100ms)) << "the blob never reached the second daemon";
  EXPECT_EQ(got, cubin);
}

TEST_F(ReapiTierTest, CompilesGoOnWhileTheServerIsDownAndTheTierComesBack) {
  server_.kill();
  TestDaemon daemon(daemon_args("down"));
  Result<CompileResult> first = Client(daemon.socket_path()).compile(request("down"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->cache, "compiled");
  Result<CacheStats> stats = Client(daemon.socket_path()).cache_stats();
  ASSERT_TRUE(stats);
  const CacheTierStats* reapi = tier_of(*stats, "reapi");
  ASSERT_NE(reapi, nullptr);
  EXPECT_TRUE(eventually([&] {
    Result<CacheStats> now = Client(daemon.socket_path()).cache_stats();
    const CacheTierStats* t = now ? tier_of(*now, "reapi") : nullptr;
    return t && t->errors + t->skipped > 0;
  }, 30s, 50ms)) << "the outage was not counted";

  ASSERT_TRUE(server_.start()) << read_file(server_.log_path());
  // Once the breaker lets a probe through, new entries reach the store again.
  int n = 0;
  EXPECT_TRUE(eventually([&] {
    Result<CompileResult> r = Client(daemon.socket_path()).compile(request("back " + std::to_string(n++)));
    if (!r) return false;
    Result<CacheStats> now = Client(daemon.socket_path()).cache_stats();
    const CacheTierStats* t = now ? tier_of(*now, "reapi") : nullptr;
    return t && t->puts > 0;
  }, 90s, 500ms)) << "the tier did not come back with the server";
}

TEST_F(ReapiTierTest, HealthSaysTheTiersAndThatLeasesArePerDaemonWithoutRedis) {
  TestDaemon daemon(daemon_args("health"));
  Result<DaemonStatus> status = Client(daemon.socket_path()).status();
  ASSERT_TRUE(status) << status.error().message;
  ASSERT_FALSE(status->cache_tiers.empty());
  EXPECT_EQ(status->cache_tiers.back(), "reapi");
  EXPECT_NE(status->cache_sharing.find("per daemon"), std::string::npos) << status->cache_sharing;
  EXPECT_NE(status->cache_sharing.find("REAPI"), std::string::npos) << status->cache_sharing;
}

// A wrong endpoint or file is the configuration's error, refused at start and
// by --check-config with exit 2, before any network is tried.
TEST(ReapiTierConfiguration, AWrongEndpointOrFileIsRefusedAtStart) {
  struct Case {
    std::vector<std::string> args;
    std::string config;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"--reapi", "http://cache:9092"}, "", "grpc://"},
      {{"--reapi", "grpcs://cache:9092/x"}, "", "HOST:PORT"},
      {{"--reapi", "grpcs://cache:9092", "--reapi-tls-ca", "/nonexistent/ca.pem"}, "", "/nonexistent/ca.pem"},
      {{"--reapi", "grpc://cache:9092", "--reapi-token-file", "/nonexistent/token"}, "", "/nonexistent/token"},
      {{"--reapi", "grpc://cache:9092", "--reapi-tls-ca", "/etc/hostname"}, "", "grpcs://"},
      {{"--reapi-instance", "main"}, "", "no endpoint"},
      {{}, "[cache.reapi]\nendpoint = \"grpc://cache:9092\"\nheaders = [\"no colon\"]\n", "Name: value"},
      {{}, "[cache.reapi]\nendpoint = \"grpc://cache:9092\"\nnamespaces = \"tenant\"\n", "namespaces"},
      {{}, "[cache.reapi]\nendpoint = \"grpc://cache:9092\"\ntimeout_ms = 0\n", "timeout_ms"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("--check-config");
    CommandResult r = run_kjitd(args, c.config);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  CommandResult fine = run_kjitd({"--reapi", "grpc://cache.invalid:9092", "--check-config"});
  EXPECT_EQ(fine.err.find("[cache.reapi]"), std::string::npos)
      << "a well-formed endpoint passes the check, reachable or not: " << fine.err;
}

}  // namespace
}  // namespace kjit::test
