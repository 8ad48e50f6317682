// The Redis tier against a real redis-server: round trip, TTL and its
// renewal on a hit, corruption, the circuit breaker across an outage, and
// lease semantics, renewal included.
#include "cache/redis_store.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "redis_server.h"
#include "sample_entries.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;
using test::make_entry;

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::RedisServer::installed()) GTEST_SKIP() << test::RedisServer::k_binary << " is not installed";
    ASSERT_TRUE(server_.start());
  }

  RedisStore::Options options() const {
    RedisStore::Options o;
    o.port = server_.port();
    o.ttl = 60s;
    o.breaker = {.failures_to_open = 2, .backoff_initial = 200ms, .backoff_max = 1s};
    return o;
  }

  test::RedisServer server_;
};

TEST_F(RedisStoreTest, PutThenGetReturnsTheEntry) {
  RedisStore store(options());
  CacheEntry entry = make_entry(key_for(1), std::string(256 * 1024, 'r'));
  ASSERT_TRUE(store.put(entry).ok());
  Result<std::optional<CacheEntry>> got = store.get(entry.key);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  test::expect_same_entry(**got, entry);
  Result<std::optional<CacheEntry>> missing = store.get(key_for(2));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  StoreStats stats = store.stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.puts, 1u);
  EXPECT_EQ(stats.errors, 0u);
  ASSERT_TRUE(store.remove(entry.key).ok());
  EXPECT_FALSE(store.get(entry.key).value().has_value());
}

TEST_F(RedisStoreTest, EntriesCarryTheirTimeToLiveAndExpire) {
  RedisStore::Options o = options();
  o.ttl = 1s;
  RedisStore store(o);
  CacheEntry entry = make_entry(key_for(1), "short-lived");
  ASSERT_TRUE(store.put(entry).ok());
  const std::string ttl = server_.command({"PTTL", store.entry_key(entry.key)});
  EXPECT_GT(std::stoll(ttl), 0);
  EXPECT_LE(std::stoll(ttl), 1000);
  EXPECT_TRUE(store.get(entry.key).value().has_value());
  std::this_thread::sleep_for(1200ms);
  EXPECT_FALSE(store.get(entry.key).value().has_value());
}

TEST_F(RedisStoreTest, HitRenewsTheTimeToLive) {
  RedisStore store(options());  // ttl 60 s
  CacheEntry entry = make_entry(key_for(1), "used every day");
  ASSERT_TRUE(store.put(entry).ok());
  const std::string stored = store.entry_key(entry.key);
  // Ages the entry instead of waiting for it to age: one second left to live.
  ASSERT_EQ(server_.command({"PEXPIRE", stored, "1000"}), "1");
  ASSERT_TRUE(store.get(entry.key).value().has_value());
  const long long ttl_ms = std::stoll(server_.command({"PTTL", stored}));
  EXPECT_GT(ttl_ms, 59'000);
  EXPECT_LE(ttl_ms, 60'000);
  EXPECT_EQ(store.stats().hits, 1u);
  EXPECT_EQ(store.stats().errors, 0u);
}

TEST_F(RedisStoreTest, MissCreatesNoKey) {
  RedisStore store(options());
  EXPECT_FALSE(store.get(key_for(1)).value().has_value());
  EXPECT_EQ(server_.command({"EXISTS", store.entry_key(key_for(1))}), "0");
  EXPECT_EQ(server_.command({"DBSIZE"}), "0");
  EXPECT_EQ(store.stats().misses, 1u);
}

TEST_F(RedisStoreTest, CorruptValueIsRemovedCountedAndMisses) {
  RedisStore store(options());
  const std::string key = key_for(1);
  std::string encoded = encode_entry(make_entry(key, "payload"));
  encoded[encoded.size() - 2] ^= 1;
  ASSERT_EQ(server_.command({"SET", store.entry_key(key), encoded}), "OK");
  Result<std::optional<CacheEntry>> got = store.get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(store.stats().corruptions, 1u);
  EXPECT_EQ(server_.command({"EXISTS", store.entry_key(key)}), "0");
}

TEST_F(RedisStoreTest, ListShowsStoredKeys) {
  RedisStore store(options());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store.put(make_entry(key_for(i), "p")).ok());
  ASSERT_EQ(server_.command({"SET", "unrelated", "x"}), "OK");
  Result<std::vector<StoredKey>> listed = store.list();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 5u);
  for (const StoredKey& k : *listed) {
    EXPECT_EQ(k.key.size(), 64u);
    EXPECT_EQ(k.bytes, encode_entry(make_entry(k.key, "p")).size());
  }
}

TEST_F(RedisStoreTest, OutageOpensTheBreakerAndRecoveryClosesIt) {
  RedisStore store(options());
  CacheEntry entry = make_entry(key_for(1), "payload");
  ASSERT_TRUE(store.put(entry).ok());
  server_.stop();

  // Failures until the breaker opens, then requests are skipped without
  // touching the network.
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(store.get(entry.key).ok());
  EXPECT_TRUE(store.breaker_open());
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<CacheEntry>> skipped = store.get(entry.key);
  EXPECT_FALSE(skipped.ok());
  EXPECT_EQ(skipped.error().code, ErrorCode::unavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms);
  StoreStats down = store.stats();
  EXPECT_EQ(down.errors, 2u);
  EXPECT_GE(down.skipped, 1u);

  ASSERT_TRUE(server_.start());        // empty: no persistence
  std::this_thread::sleep_for(250ms);  // past the backoff
  EXPECT_TRUE(store.put(entry).ok());
  EXPECT_FALSE(store.breaker_open());
  EXPECT_TRUE(store.get(entry.key).value().has_value());
}

TEST_F(RedisStoreTest, RestartBetweenRequestsCostsNoFailure) {
  RedisStore store(options());
  ASSERT_TRUE(store.put(make_entry(key_for(1), "p")).ok());  // leaves a pooled connection
  server_.stop();
  ASSERT_TRUE(server_.start());
  EXPECT_TRUE(store.put(make_entry(key_for(1), "p")).ok());
  EXPECT_EQ(store.stats().errors, 0u);
}

TEST_F(RedisStoreTest, ManyThreadsShareTheStore) {
  RedisStore store(options());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < 50; ++n) {
        const std::string key = key_for(t * 1000 + n);
        if (!store.put(make_entry(key, key)).ok()) ++wrong;
        Result<std::optional<CacheEntry>> got = store.get(key);
        if (!got.ok() || !got->has_value() || (*got)->artifact.bytes != key) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(store.stats().errors, 0u);
}

TEST_F(RedisStoreTest, LeaseHasOneOwnerAndOnlyTheOwnerReleasesIt) {
  RedisStore store(options());
  const std::string key = key_for(1);
  EXPECT_EQ(store.try_acquire_lease(key, "daemon-a", 10s), LeaseOutcome::acquired);
  EXPECT_EQ(store.try_acquire_lease(key, "daemon-b", 10s), LeaseOutcome::held_by_other);
  EXPECT_EQ(store.lease_holder(key).value(), std::optional<std::string>("daemon-a"));
  ASSERT_TRUE(store.release_lease(key, "daemon-b").ok());  // not b's to release
  EXPECT_EQ(store.try_acquire_lease(key, "daemon-b", 10s), LeaseOutcome::held_by_other);
  ASSERT_TRUE(store.release_lease(key, "daemon-a").ok());
  EXPECT_EQ(store.lease_holder(key).value(), std::nullopt);
  EXPECT_EQ(store.try_acquire_lease(key, "daemon-b", 10s), LeaseOutcome::acquired);
}

TEST_F(RedisStoreTest, LeaseExpiresSoACrashedOwnerCannotBlock) {
  RedisStore store(options());
  const std::string key = key_for(1);
  EXPECT_EQ(store.try_acquire_lease(key, "crashed", 150ms), LeaseOutcome::acquired);
  EXPECT_EQ(store.try_acquire_lease(key, "other", 10s), LeaseOutcome::held_by_other);
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(store.try_acquire_lease(key, "other", 10s), LeaseOutcome::acquired);
  // The expired owner's late release must not drop the new owner's lease.
  ASSERT_TRUE(store.release_lease(key, "crashed").ok());
  EXPECT_EQ(store.lease_holder(key).value(), std::optional<std::string>("other"));
}

TEST_F(RedisStoreTest, EntriesOfOtherFormatVersionsAreNeitherReadNorRemoved) {
  // A fleet upgrading kjit shares one Redis between two entry formats.
  RedisStore store(options());
  const std::string key = key_for(3);
  const std::string format1_key = "kjit:entry:" + key;  // where format 1 kept it
  const std::string newer_key = "kjit:v999:entry:" + key;
  ASSERT_EQ(server_.command({"SET", format1_key, "an older kjit's entry"}), "OK");
  ASSERT_EQ(server_.command({"SET", newer_key, "a newer kjit's entry"}), "OK");
  Result<std::optional<CacheEntry>> got = store.get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(store.stats().corruptions, 0u);
  EXPECT_EQ(server_.command({"EXISTS", format1_key}), "1");
  EXPECT_EQ(server_.command({"EXISTS", newer_key}), "1");
  EXPECT_NE(store.entry_key(key).find(":v" + std::to_string(k_entry_format_version) + ":"), std::string::npos);
}

TEST_F(RedisStoreTest, OwnerExtendsItsLease) {
  RedisStore store(options());
  const std::string key = key_for(1);
  ASSERT_EQ(store.try_acquire_lease(key, "daemon-a", 500ms), LeaseOutcome::acquired);
  Status extended = store.extend_lease(key, "daemon-a", 10s);
  ASSERT_TRUE(extended.ok()) << extended.error().message;
  const long long ttl_ms = std::stoll(server_.command({"PTTL", store.lease_key(key)}));
  EXPECT_GT(ttl_ms, 9'000);
  EXPECT_LE(ttl_ms, 10'000);
  EXPECT_EQ(store.lease_holder(key).value(), std::optional<std::string>("daemon-a"));
}

TEST_F(RedisStoreTest, OnlyTheOwnerExtendsALease) {
  RedisStore store(options());
  const std::string key = key_for(1);
  ASSERT_EQ(store.try_acquire_lease(key, "daemon-a", 1s), LeaseOutcome::acquired);
  Status extended = store.extend_lease(key, "daemon-b", 10s);
  ASSERT_FALSE(extended.ok());
  EXPECT_EQ(extended.error().code, ErrorCode::not_found) << extended.error().message;
  const long long ttl_ms = std::stoll(server_.command({"PTTL", store.lease_key(key)}));
  EXPECT_GT(ttl_ms, 0);
  EXPECT_LE(ttl_ms, 1'000);
  EXPECT_EQ(store.lease_holder(key).value(), std::optional<std::string>("daemon-a"));
  EXPECT_EQ(store.stats().errors, 0u);  // a lost lease is not a Redis failure
}

TEST_F(RedisStoreTest, ExtendingAMissingLeaseFailsAndCreatesNothing) {
  RedisStore store(options());
  const std::string key = key_for(1);
  Status extended = store.extend_lease(key, "daemon-a", 10s);
  ASSERT_FALSE(extended.ok());
  EXPECT_EQ(extended.error().code, ErrorCode::not_found) << extended.error().message;
  EXPECT_EQ(server_.command({"EXISTS", store.lease_key(key)}), "0");
}

// The renewer keeps trying through an outage but gives up on a lost lease,
// so the two must be told apart.
TEST_F(RedisStoreTest, ExtendingALeaseWhileRedisIsDownIsNotALostLease) {
  RedisStore store(options());
  server_.stop();
  Status extended = store.extend_lease(key_for(1), "daemon-a", 10s);
  ASSERT_FALSE(extended.ok());
  EXPECT_EQ(extended.error().code, ErrorCode::unavailable) << extended.error().message;
}

TEST_F(RedisStoreTest, LeaseIsUnavailableWhileRedisIsDown) {
  RedisStore store(options());
  server_.stop();
  EXPECT_EQ(store.try_acquire_lease(key_for(1), "a", 1s), LeaseOutcome::unavailable);
}

TEST_F(RedisStoreTest, OperationTimeoutBoundsAStalledServer) {
  RedisStore::Options o = options();
  o.operation_timeout = 100ms;
  RedisStore store(o);
  ASSERT_TRUE(store.put(make_entry(key_for(1), "p")).ok());
  ASSERT_EQ(server_.command({"CLIENT", "PAUSE", "1000", "ALL"}), "OK");
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<CacheEntry>> got = store.get(key_for(1));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::deadline_exceeded) << got.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 600ms);
}

// A loopback listener that never accepts, its accept queue filled so that a
// further connect stalls in SYN retries: only the connect timeout ends it.
// Everything stays on 127.0.0.1.
class StalledListener {
 public:
  StalledListener() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::listen(listener_, 0);
    socklen_t size = sizeof(address);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    for (int i = 0; i < 4; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
      fillers_.push_back(fd);
    }
  }
  ~StalledListener() {
    for (int fd : fillers_) ::close(fd);
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

TEST(RedisStore, ConnectTimeoutBoundsAnUnresponsiveServer) {
  StalledListener stalled;
  RedisStore::Options o;
  o.host = "127.0.0.1";
  o.port = stalled.port();
  o.connect_timeout = 100ms;
  o.operation_timeout = 200ms;
  RedisStore store(o);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(store.get(key_for(1)).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

}  // namespace
}  // namespace kjit
