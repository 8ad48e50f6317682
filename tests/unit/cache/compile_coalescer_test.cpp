// One compile per key: 32 concurrent cold requests in one daemon, and
// daemons sharing a cache tier and leases, the same tests for an in-memory
// fake of the leases and for Redis: waiting for the holder's result, renewal
// during a compile longer than the lease's TTL, a crashed or stuck holder,
// the lease store down; with the fake, a holder cut off from the leases.
#include "cache/compile_coalescer.h"

#include <gtest/gtest.h>

#include <latch>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "cache/disk_store.h"
#include "cache/redis_leases.h"
#include "cache/redis_store.h"
#include "fake_leases.h"
#include "redis_server.h"
#include "sample_entries.h"
#include "support/eventually.h"
#include "temp_dir.h"
#include "typed_setup.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;
using test::make_entry;

std::shared_ptr<DiskStore> open_disk(const std::string& dir) {
  return std::shared_ptr<DiskStore>(DiskStore::open({.directory = dir}).value().release());
}

// A compile that takes a while, so the concurrent requests overlap it.
CompileCoalescer::Compile slow_compile(std::atomic<int>& compiles, std::chrono::milliseconds duration = 300ms) {
  return [&compiles, duration]() -> Result<CacheEntry> {
    ++compiles;
    std::this_thread::sleep_for(duration);
    CacheEntry entry = make_entry("", "the one cubin");
    entry.compile_ms = 0;
    entry.created_unix = 0;
    return entry;
  };
}

// A compile that returns only once `waiter` waits on another daemon's lease
// (bounded), and compile_time after that: the other daemon is certainly
// waiting while it runs, however slowly the test's threads get going.
CompileCoalescer::Compile compile_once_waited_on(std::atomic<int>& compiles, const CompileCoalescer& waiter,
                                                 std::chrono::milliseconds compile_time = 0ms) {
  return [&compiles, &waiter, compile_time]() -> Result<CacheEntry> {
    ++compiles;
    EXPECT_TRUE(test::eventually([&] { return waiter.stats().fleet_waits > 0; })) << "nobody waited on the lease";
    std::this_thread::sleep_for(compile_time);
    CacheEntry entry = make_entry("", "the one cubin");
    entry.compile_ms = 0;
    entry.created_unix = 0;
    return entry;
  };
}

// A daemon's get_or_compile on a thread of its own. Constructing returns
// once its compile has started, so from then on the daemon holds the lease
// until the compile returns.
class CompilingDaemon {
 public:
  CompilingDaemon(CompileCoalescer& daemon, const std::string& key, CompileCoalescer::Compile compile)
      : thread_([this, &daemon, key, compile = std::move(compile)] {
          bool compiled = false;
          result_ = daemon.get_or_compile(key, [&]() -> Result<CacheEntry> {
            compiled = true;
            compiling_.count_down();
            return compile();
          });
          if (!compiled) compiling_.count_down();  // a hit: nothing to wait for
        }) {
    compiling_.wait();
  }
  ~CompilingDaemon() {
    if (thread_.joinable()) thread_.join();
  }

  Result<CacheOutcome> result() {
    thread_.join();
    return std::move(result_);
  }

 private:
  std::latch compiling_{1};
  Result<CacheOutcome> result_ = Error{};
  std::thread thread_;  // last: it starts once every member it uses exists
};

TEST(CompileCoalescer, ThirtyTwoConcurrentColdRequestsCompileCoalescer) {
  auto cache = std::make_shared<TieredCache>(
      TieredCache::Tiers{std::make_shared<MemoryStore>(MemoryStore::Options{}), nullptr, nullptr});
  CompileCoalescer once(cache, nullptr, {});
  std::atomic<int> compiles{0};
  const CompileCoalescer::Compile compile = slow_compile(compiles);
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

TEST(CompileCoalescer, CompileErrorsReachEveryWaiterAndAreNotCached) {
  auto cache = std::make_shared<TieredCache>(
      TieredCache::Tiers{std::make_shared<MemoryStore>(MemoryStore::Options{}), nullptr, nullptr});
  CompileCoalescer once(cache, nullptr, {});
  std::atomic<int> calls{0};
  CompileCoalescer::Compile failing = [&]() -> Result<CacheEntry> {
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

// A fleet's shared tier and leases as one daemon sees them.
struct FleetLink {
  std::shared_ptr<Store> shared;  // in the Redis tier's place
  std::shared_ptr<LeaseStore> leases;
};

// Daemons in one process sharing a MemoryStore and the fake's leases.
struct FakeFleet {
  static constexpr const char* k_name = "Fake";
  static constexpr bool k_uses_redis = false;
  bool start() { return true; }
  FleetLink join() { return {shared, leases}; }
  void go_down() { leases->set_available(false); }
  std::shared_ptr<MemoryStore> shared = std::make_shared<MemoryStore>(MemoryStore::Options{});
  std::shared_ptr<test::FakeLeases> leases = std::make_shared<test::FakeLeases>();
};

// Daemons sharing a redis-server, each through connections of its own.
struct RedisFleet {
  static constexpr const char* k_name = "Redis";
  static constexpr bool k_uses_redis = true;
  bool start() { return server.start(); }
  FleetLink join() {
    auto redis = std::make_shared<RedisConnection>(server.connection_options());
    return {std::make_shared<RedisStore>(redis, RedisStore::Options{}), std::make_shared<RedisLeases>(redis)};
  }
  void go_down() { server.stop(); }
  test::RedisServer server;
};

template <typename Fleet>
class CompileCoalescerFleet : public test::SetupTest<Fleet> {
 protected:
  // A daemon: its own memory and disk, the fleet's shared tier and leases.
  std::unique_ptr<CompileCoalescer> daemon(CompileCoalescer::Options options = {.poll_interval = 20ms}) {
    dirs_.push_back(std::make_unique<test::TempDir>());
    FleetLink link = this->setup_.join();
    auto cache = std::make_shared<TieredCache>(TieredCache::Tiers{std::make_shared<MemoryStore>(MemoryStore::Options{}),
                                                                  open_disk(dirs_.back()->path()), link.shared});
    return std::make_unique<CompileCoalescer>(cache, link.leases, options);
  }

  // Daemon a compiles while daemon b asks for the same key: b waits for a's
  // lease to go and answers with a's result from the shared tier, without
  // compiling. a's compile goes on until b waits on its lease, and then for
  // compile_time.
  void expect_one_compile_for_two_daemons(CompileCoalescer::Options options, std::chrono::milliseconds compile_time) {
    auto a = daemon(options);
    auto b = daemon(options);
    std::atomic<int> compiles{0};
    CompilingDaemon holder(*a, key_for(1), compile_once_waited_on(compiles, *b, compile_time));
    Result<CacheOutcome> b_result = b->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
    Result<CacheOutcome> a_result = holder.result();

    EXPECT_EQ(compiles.load(), 1);
    ASSERT_TRUE(a_result.ok()) << a_result.error().message;
    EXPECT_EQ(a_result->source, CacheSource::compiled);
    ASSERT_TRUE(b_result.ok()) << b_result.error().message;
    EXPECT_EQ(b_result->source, CacheSource::redis);  // the shared tier
    EXPECT_TRUE(b_result->waited);
    EXPECT_EQ(b_result->entry->artifact.bytes, "the one cubin");
    EXPECT_EQ(b->stats().compiles, 0u);
    EXPECT_EQ(b->stats().fleet_waits, 1u);
    EXPECT_EQ(b->stats().lease_timeouts, 0u);
    EXPECT_EQ(leases().holder(key_for(1)).value(), std::nullopt);  // released
  }

  // The test's own view of the fleet's leases.
  LeaseStore& leases() {
    if (!leases_) leases_ = this->setup_.join().leases;
    return *leases_;
  }

  std::shared_ptr<LeaseStore> leases_;
  std::vector<std::unique_ptr<test::TempDir>> dirs_;
};

using Fleets = ::testing::Types<FakeFleet, RedisFleet>;
TYPED_TEST_SUITE(CompileCoalescerFleet, Fleets, test::SetupName);

TYPED_TEST(CompileCoalescerFleet, TwoDaemonsCompileCoalescer) {
  auto a = this->daemon();
  auto b = this->daemon();
  std::atomic<int> compiles{0};
  // Whichever daemon compiles, it returns once the other one waits on its
  // lease (bounded): they overlap however slowly the threads get going.
  const CompileCoalescer::Compile compile = [&]() -> Result<CacheEntry> {
    ++compiles;
    EXPECT_TRUE(test::eventually([&] { return a->stats().fleet_waits + b->stats().fleet_waits > 0; }))
        << "neither daemon waited on the other's lease";
    return make_entry("", "the one cubin");
  };
  std::latch start(32);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      Result<CacheOutcome> r = (t % 2 ? a : b)->get_or_compile(key_for(1), compile);
      if (!r.ok() || r->entry->artifact.bytes != "the one cubin") ++wrong;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(a->stats().fleet_waits + b->stats().fleet_waits, 1u);
  EXPECT_EQ(this->leases().holder(key_for(1)).value(), std::nullopt);  // released
}

TYPED_TEST(CompileCoalescerFleet, SecondDaemonWaitsForTheHoldersResult) {
  this->expect_one_compile_for_two_daemons({.poll_interval = 20ms}, 300ms);
}

// Without renewal the 300 ms lease would expire during the 1.2 s compile and
// the second daemon would take it and compile too.
TYPED_TEST(CompileCoalescerFleet, CompileLongerThanTheLeaseTtlStillRunsOnce) {
  this->expect_one_compile_for_two_daemons({.lease_ttl = 300ms, .poll_interval = 20ms},
                                           1200ms);  // renewed every 100 ms
  if constexpr (std::is_same_v<TypeParam, FakeFleet>) {
    EXPECT_GE(this->setup_.leases->renewals(key_for(1)), 3);
  }
}

TYPED_TEST(CompileCoalescerFleet, LeaseRenewalStopsWhenTheCompileReturns) {
  auto d = this->daemon({.lease_ttl = 60s, .poll_interval = 20ms});  // renews every 20 s
  std::atomic<int> compiles{0};
  const auto start = std::chrono::steady_clock::now();
  Result<CacheOutcome> r = d->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  // A renewer that slept out its interval before noticing would take 20 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(this->leases().holder(key_for(1)).value(), std::nullopt);
}

TYPED_TEST(CompileCoalescerFleet, ExpiredLeaseOfACrashedDaemonIsTakenOver) {
  auto d = this->daemon();
  // Timed from before the lease was taken: a slow thread lengthens the wait
  // measured, never shortens it below the lease's 300 ms.
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(this->leases().try_acquire(key_for(1), "crashed-daemon", 300ms), LeaseOutcome::acquired);
  std::atomic<int> compiles{0};
  Result<CacheOutcome> r = d->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, CacheSource::compiled);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);  // waited for the expiry
  EXPECT_EQ(d->stats().lease_timeouts, 0u);
}

TYPED_TEST(CompileCoalescerFleet, WaitIsBoundedThenTheDaemonCompilesItself) {
  auto d = this->daemon({.max_wait = 200ms, .poll_interval = 20ms});
  ASSERT_EQ(this->leases().try_acquire(key_for(1), "stuck-daemon", 60s), LeaseOutcome::acquired);
  std::atomic<int> compiles{0};
  Result<CacheOutcome> r = d->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(d->stats().lease_timeouts, 1u);
}

TYPED_TEST(CompileCoalescerFleet, LeaseStoreDownMeansCompileLocally) {
  auto d = this->daemon();
  this->setup_.go_down();
  std::atomic<int> compiles{0};
  Result<CacheOutcome> r = d->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, CacheSource::compiled);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(d->stats().fleet_waits, 0u);
  EXPECT_EQ(d->get_or_compile(key_for(1), slow_compile(compiles, 10ms))->source, CacheSource::memory);
}

using CompileCoalescerFakeFleet = CompileCoalescerFleet<FakeFleet>;

// a keeps compiling but can no longer reach the leases, so its renewals
// fail: its lease expires after the TTL and b, waiting on it, compiles.
TEST_F(CompileCoalescerFakeFleet, LeaseWhoseHolderStopsRenewingExpiresAndTheWaiterCompiles) {
  auto a = daemon({.lease_ttl = 200ms, .poll_interval = 10ms, .owner = "daemon-a"});
  auto b = daemon({.lease_ttl = 200ms, .poll_interval = 10ms, .owner = "daemon-b"});
  std::atomic<int> compiles{0};
  // a's compile: once b waits on a's lease, a loses the lease store, and
  // it goes on until b has compiled (bounded), so b cannot have waited for
  // it to end.
  std::atomic<bool> a_outlived_b{false};
  const CompileCoalescer::Compile a_compile = [&]() -> Result<CacheEntry> {
    ++compiles;
    EXPECT_TRUE(test::eventually([&] { return b->stats().fleet_waits > 0; })) << "b never waited on a's lease";
    setup_.leases->cut_off("daemon-a");
    a_outlived_b = test::eventually([&] { return compiles.load() == 2; });
    return make_entry("", "the one cubin");
  };
  // Timed from before a took its lease: a slow thread lengthens the time
  // measured, never shortens it below the lease's 200 ms.
  const auto start = std::chrono::steady_clock::now();
  CompilingDaemon holder(*a, key_for(1), a_compile);
  Result<CacheOutcome> b_result = b->get_or_compile(key_for(1), slow_compile(compiles, 10ms));
  const auto b_done = std::chrono::steady_clock::now() - start;
  Result<CacheOutcome> a_result = holder.result();

  ASSERT_TRUE(b_result.ok()) << b_result.error().message;
  EXPECT_EQ(b_result->source, CacheSource::compiled);
  EXPECT_EQ(compiles.load(), 2);
  EXPECT_GE(b_done, 200ms);  // for the lease to expire
  EXPECT_TRUE(a_outlived_b.load()) << "b waited for a's compile to end, not for its lease to expire";
  EXPECT_EQ(b->stats().fleet_waits, 1u);
  EXPECT_EQ(b->stats().lease_timeouts, 0u);
  ASSERT_TRUE(a_result.ok()) << a_result.error().message;
  EXPECT_EQ(a_result->source, CacheSource::compiled);
}

}  // namespace
}  // namespace kjit
