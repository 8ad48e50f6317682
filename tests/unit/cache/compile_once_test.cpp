// One compile per key: 32 concurrent cold requests in one daemon, two
// daemons sharing Redis, a compile outliving its lease's TTL, and the
// bounded wait on a lease that is never released.
#include "cache/compile_once.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>

#include "cache/disk_store.h"
#include "redis_server.h"
#include "sample_entries.h"
#include "temp_dir.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;
using test::make_entry;

std::shared_ptr<DiskStore> open_disk(const std::string& dir) {
  return std::shared_ptr<DiskStore>(DiskStore::open({.directory = dir}).value().release());
}

// A compile that takes a while, so the concurrent requests overlap it.
CompileOnce::Compile slow_compile(std::atomic<int>& compiles, std::chrono::milliseconds duration = 300ms) {
  return [&compiles, duration]() -> Result<CacheEntry> {
    ++compiles;
    std::this_thread::sleep_for(duration);
    CacheEntry entry = make_entry("", "the one cubin");
    entry.compile_ms = 0;
    entry.created_unix = 0;
    return entry;
  };
}

TEST(CompileOnce, ThirtyTwoConcurrentColdRequestsCompileOnce) {
  auto cache = std::make_shared<TieredCache>(
      TieredCache::Tiers{std::make_shared<MemoryStore>(MemoryStore::Options{}), nullptr, nullptr});
  CompileOnce once(cache, nullptr, {});
  std::atomic<int> compiles{0};
  const CompileOnce::Compile compile = slow_compile(compiles);
  std::vector<Result<CacheOutcome>> results(32, Error{});
  std::latch start(32);
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = once.get_or_compile(key_for(1), compile);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(compiles.load(), 1);
  int compiled = 0;
  for (const Result<CacheOutcome>& r : results) {
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->entry->artifact.bytes, "the one cubin");
    EXPECT_EQ(r->entry->key, key_for(1));
    if (r->source == CacheSource::compiled) {
      ++compiled;
      EXPECT_FALSE(r->waited);
    } else if (r->source == CacheSource::joined) {
      EXPECT_TRUE(r->waited);
      EXPECT_EQ(to_string(r->source), "joined");
    }
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_GT(results[0]->entry->compile_ms, 250);  // measured, since the compile left it at 0
  EXPECT_GT(results[0]->entry->created_unix, 0);
  EXPECT_EQ(once.stats().compiles, 1u);

  Result<CacheOutcome> later = once.get_or_compile(key_for(1), compile);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->source, CacheSource::memory);
  EXPECT_EQ(to_string(later->source), "memory");
}

TEST(CompileOnce, CompileErrorsReachEveryWaiterAndAreNotCached) {
  auto cache = std::make_shared<TieredCache>(
      TieredCache::Tiers{std::make_shared<MemoryStore>(MemoryStore::Options{}), nullptr, nullptr});
  CompileOnce once(cache, nullptr, {});
  std::atomic<int> calls{0};
  CompileOnce::Compile failing = [&]() -> Result<CacheEntry> {
    ++calls;
    std::this_thread::sleep_for(100ms);
    return make_error(ErrorCode::invalid_argument, "syntax error");
  };
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      if (!once.get_or_compile(key_for(1), failing).ok()) ++errors;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 4);
  EXPECT_FALSE(cache->get(key_for(1)).has_value());
}

class CompileOnceFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::RedisServer::installed()) GTEST_SKIP() << test::RedisServer::k_binary << " is not installed";
    ASSERT_TRUE(server_.start());
  }

  // A daemon: its own memory and disk, the fleet's Redis.
  struct Daemon {
    std::shared_ptr<RedisStore> redis;
    std::unique_ptr<CompileOnce> once;
  };
  Daemon daemon(const std::string& dir, CompileOnce::Options options = {.poll_interval = 20ms}) {
    RedisStore::Options o;
    o.port = server_.port();
    auto redis = std::make_shared<RedisStore>(o);
    auto cache = std::make_shared<TieredCache>(
        TieredCache::Tiers{std::make_shared<MemoryStore>(MemoryStore::Options{}), open_disk(dir), redis});
    return Daemon{redis, std::make_unique<CompileOnce>(cache, redis, options)};
  }

  test::RedisServer server_;
};

TEST_F(CompileOnceFleetTest, TwoDaemonsSharingRedisCompileOnce) {
  test::TempDir dir_a, dir_b;
  Daemon a = daemon(dir_a.path());
  Daemon b = daemon(dir_b.path());
  std::atomic<int> compiles{0};
  const CompileOnce::Compile compile = slow_compile(compiles, 400ms);
  std::latch start(32);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      Result<CacheOutcome> r = (t % 2 ? a : b).once->get_or_compile(key_for(1), compile);
      if (!r.ok() || r->entry->artifact.bytes != "the one cubin") ++wrong;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(a.once->stats().fleet_waits + b.once->stats().fleet_waits, 1u);
  EXPECT_EQ(a.redis->lease_holder(key_for(1)).value(), std::nullopt);  // released
}

// Without renewal the 300 ms lease would expire during the 1.2 s compile and
// the second daemon would take it and compile too.
TEST_F(CompileOnceFleetTest, CompileLongerThanTheLeaseTtlStillRunsOnce) {
  test::TempDir dir_a, dir_b;
  const CompileOnce::Options options{.lease_ttl = 300ms, .poll_interval = 20ms};
  Daemon a = daemon(dir_a.path(), options);
  Daemon b = daemon(dir_b.path(), options);
  std::atomic<int> compiles{0};
  const CompileOnce::Compile long_compile = slow_compile(compiles, 1200ms);
  std::latch a_compiling(1);
  Result<CacheOutcome> a_result = Error{};
  std::thread first([&] {
    a_result = a.once->get_or_compile(key_for(1), [&]() -> Result<CacheEntry> {
      a_compiling.count_down();
      return long_compile();
    });
  });
  a_compiling.wait();  // a holds the lease from here until its compile returns
  Result<CacheOutcome> b_result = b.once->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  first.join();

  EXPECT_EQ(compiles.load(), 1);
  ASSERT_TRUE(a_result.ok()) << a_result.error().message;
  EXPECT_EQ(a_result->source, CacheSource::compiled);
  ASSERT_TRUE(b_result.ok()) << b_result.error().message;
  EXPECT_EQ(b_result->source, CacheSource::redis);
  EXPECT_TRUE(b_result->waited);
  EXPECT_EQ(b_result->entry->artifact.bytes, "the one cubin");
  EXPECT_EQ(b.once->stats().fleet_waits, 1u);
  EXPECT_EQ(b.once->stats().lease_timeouts, 0u);
  EXPECT_EQ(a.redis->lease_holder(key_for(1)).value(), std::nullopt);  // released
}

TEST_F(CompileOnceFleetTest, LeaseRenewalStopsWhenTheCompileReturns) {
  test::TempDir dir;
  Daemon d = daemon(dir.path(), {.lease_ttl = 60s, .poll_interval = 20ms});  // renews every 20 s
  std::atomic<int> compiles{0};
  const auto start = std::chrono::steady_clock::now();
  Result<CacheOutcome> r = d.once->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  // A renewer that slept out its interval before noticing would take 20 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(d.redis->lease_holder(key_for(1)).value(), std::nullopt);
}

TEST_F(CompileOnceFleetTest, ExpiredLeaseOfACrashedDaemonIsTakenOver) {
  test::TempDir dir;
  Daemon d = daemon(dir.path());
  ASSERT_EQ(d.redis->try_acquire_lease(key_for(1), "crashed-daemon", 300ms), LeaseOutcome::acquired);
  std::atomic<int> compiles{0};
  const auto start = std::chrono::steady_clock::now();
  Result<CacheOutcome> r = d.once->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, CacheSource::compiled);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);  // waited for the expiry
  EXPECT_EQ(d.once->stats().lease_timeouts, 0u);
}

TEST_F(CompileOnceFleetTest, WaitIsBoundedThenTheDaemonCompilesItself) {
  test::TempDir dir;
  Daemon d = daemon(dir.path(), {.max_wait = 200ms, .poll_interval = 20ms});
  ASSERT_EQ(d.redis->try_acquire_lease(key_for(1), "stuck-daemon", 60s), LeaseOutcome::acquired);
  std::atomic<int> compiles{0};
  Result<CacheOutcome> r = d.once->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(d.once->stats().lease_timeouts, 1u);
}

TEST_F(CompileOnceFleetTest, RedisDownMeansCompileLocally) {
  test::TempDir dir;
  Daemon d = daemon(dir.path());
  server_.stop();
  std::atomic<int> compiles{0};
  Result<CacheOutcome> r = d.once->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(d.once->get_or_compile(key_for(1), slow_compile(compiles, 10ms))->source, CacheSource::memory);
}

}  // namespace
}  // namespace kjit
