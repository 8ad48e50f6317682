// The compile cache through real daemons: memory, disk (after a restart) and
// Redis (from a second daemon) hits, one compile for concurrent identical
// requests, corruption handling, Redis going away and coming back, explain.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "kjit/client.h"
#include "redis_server.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/fails_with.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override { KJIT_SKIP_WITHOUT_TOOLKIT(); }

  static CompileRequest request(const std::string& variant = "") {
    CompileRequest r;
    r.input = std::string(k_vector_add) + "// " + variant + "\n";
    r.target = "cuda:90";
    return r;
  }
  std::vector<std::string> cache_args(const std::string& name) { return {"--cache-dir", (dir_ / name).string()}; }

  TempDir temp_;
  const fs::path dir_ = temp_.path();
};

TEST_F(CacheTest, SecondCompileIsAMemoryHitAndARestartGivesADiskHit) {
  std::string first_key, first_bytes;
  {
    TestDaemon daemon(cache_args("disk"));
    Client client(daemon.socket_path());
    auto first = client.compile(request());
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(first->cache, "compiled");
    auto second = client.compile(request());
    ASSERT_TRUE(second);
    EXPECT_EQ(second->cache, "memory");
    EXPECT_EQ(second->artifact, first->artifact);
    EXPECT_EQ(second->key, first->key);
    ASSERT_EQ(second->kernels.size(), 1u);
    EXPECT_EQ(second->kernels[0].name, "vector_add");
    first_key = first->key;
    first_bytes = first->artifact;
  }
  TestDaemon restarted(cache_args("disk"));
  auto third = Client(restarted.socket_path()).compile(request());
  ASSERT_TRUE(third);
  EXPECT_EQ(third->cache, "disk");
  EXPECT_EQ(third->artifact, first_bytes);
  EXPECT_EQ(third->key, first_key);
  auto stats = Client(restarted.socket_path()).cache_stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->compiles, 0u);
}

TEST_F(CacheTest, ASecondDaemonSharingRedisGetsARedisHit) {
  if (!RedisServer::installed()) GTEST_SKIP() << "redis-server is not installed";
  RedisServer redis;
  ASSERT_TRUE(redis.start());
  std::string address = "127.0.0.1:" + std::to_string(redis.port());
  auto a_args = cache_args("a");
  a_args.insert(a_args.end(), {"--redis", address});
  auto b_args = cache_args("b");
  b_args.insert(b_args.end(), {"--redis", address});
  TestDaemon a(a_args), b(b_args);
  auto compiled = Client(a.socket_path()).compile(request("redis"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_EQ(compiled->cache, "compiled");
  auto shared = Client(b.socket_path()).compile(request("redis"));
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->cache, "redis");
  EXPECT_EQ(shared->artifact, compiled->artifact);
  auto again = Client(b.socket_path()).compile(request("redis"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cache, "memory");  // the redis hit filled the tiers above
}

TEST_F(CacheTest, ThirtyTwoConcurrentIdenticalRequestsCompileCoalescer) {
  TestDaemon daemon(cache_args("disk"));
  std::vector<std::future<Result<CompileResult>>> futures;
  for (int i = 0; i < 32; ++i)
    futures.push_back(std::async(std::launch::async, [&] { return Client(daemon.socket_path()).compile(request("32")); }));
  std::string bytes;
  int compiled = 0, joined = 0, hits = 0;
  for (auto& f : futures) {
    auto r = f.get();
    ASSERT_TRUE(r) << r.error().message;
    if (bytes.empty()) bytes = r->artifact;
    EXPECT_EQ(r->artifact, bytes);
    compiled += r->cache == "compiled";
    joined += r->cache == "joined";
    hits += r->cache == "memory" || r->cache == "disk";
  }
  auto stats = Client(daemon.socket_path()).cache_stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->compiles, 1u);
  // One compile ran: its leader says "compiled", those that waited on its
  // flight "joined", those that came after it a cache tier.
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(compiled + joined + hits, 32);
}

TEST_F(CacheTest, AFlippedByteIsACountedCorruptionAndCompilesAgain) {
  std::string key;
  {
    TestDaemon daemon(cache_args("disk"));
    auto r = Client(daemon.socket_path()).compile(request("corrupt"));
    ASSERT_TRUE(r);
    key = r->key;
  }
  fs::path entry;
  for (const auto& f : fs::recursive_directory_iterator(dir_ / "disk"))
    if (f.is_regular_file() && f.path().filename().string().find(key) != std::string::npos) entry = f.path();
  ASSERT_FALSE(entry.empty()) << "no file for " << key;
  {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(entry) - 10));
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(static_cast<std::streamoff>(fs::file_size(entry) - 10));
    byte = static_cast<char>(byte ^ 0x5a);
    file.write(&byte, 1);
  }
  TestDaemon daemon(cache_args("disk"));
  Client client(daemon.socket_path());
  auto r = client.compile(request("corrupt"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cache, "compiled");
  auto stats = client.cache_stats();
  ASSERT_TRUE(stats);
  uint64_t corruptions = 0;
  for (const CacheTierStats& t : stats->tiers) corruptions += t.corruptions;
  EXPECT_EQ(corruptions, 1u);
  EXPECT_EQ(stats->compiles, 1u);
}

TEST_F(CacheTest, RequestsKeepSucceedingWhileRedisIsDownAndUseItWhenBack) {
  if (!RedisServer::installed()) GTEST_SKIP() << "redis-server is not installed";
  RedisServer redis;
  ASSERT_TRUE(redis.start());
  auto args = cache_args("disk");
  args.insert(args.end(), {"--redis", "127.0.0.1:" + std::to_string(redis.port())});
  TestDaemon daemon(args);
  Client client(daemon.socket_path());
  ASSERT_TRUE(client.compile(request("before")));
  redis.stop();
  for (int i = 0; i < 3; ++i) {
    auto r = client.compile(request("down-" + std::to_string(i)));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->cache, "compiled");
  }
  ASSERT_TRUE(redis.start());
  // The breaker retries Redis after its backoff (up to 30 s, doubled by
  // each failed probe while it was down); then new entries reach it again.
  int i = 0;
  std::string failed;  // a compile that failed meanwhile ends the wait
  const bool reached = eventually(
      [&] {
        auto r = client.compile(request("back-" + std::to_string(i++)));
        if (!r) failed = r.error().message;
        return !r || redis.command({"DBSIZE"}) != "0";
      },
      std::chrono::seconds(90), std::chrono::milliseconds(100));
  ASSERT_TRUE(failed.empty()) << "a compile failed after Redis came back: " << failed;
  EXPECT_TRUE(reached) << "nothing written to Redis after it came back";
}

TEST_F(CacheTest, ExplainNamesTheComponentsThatDiffer) {
  TestDaemon daemon(cache_args("disk"));
  Client client(daemon.socket_path());
  ExplainSide left{request("explain"), ""}, right{request("explain"), ""};
  right.request.target = "cuda:100";
  right.request.options = {"-lineinfo"};
  auto explanation = client.explain(left, right);
  ASSERT_TRUE(explanation) << explanation.error().message;
  std::vector<std::string> names;
  for (const auto& d : explanation->differences) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"target", "options"}));
  // By key, from entries already in the cache.
  auto a = client.compile(left.request);
  auto b = client.compile(right.request);
  ASSERT_TRUE(a && b);
  auto by_key = client.explain({{}, a->key}, {{}, b->key});
  ASSERT_TRUE(by_key) << by_key.error().message;
  EXPECT_EQ(by_key->differences.size(), 2u);
  EXPECT_EQ(by_key->left_key, a->key);
}

TEST_F(CacheTest, NoCacheFlagCompilesEveryTime) {
  TestDaemon daemon({"--no-cache"});
  Client client(daemon.socket_path());
  for (int i = 0; i < 2; ++i) {
    auto r = client.compile(request("nocache"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cache, "compiled");
  }
  auto stats = client.cache_stats();
  ASSERT_TRUE(fails_with(stats, ErrorCode::failed_precondition));
}

}  // namespace
}  // namespace kjit::test
