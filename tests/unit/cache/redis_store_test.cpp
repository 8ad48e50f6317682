// The Redis tier against a real redis-server: TTL and its renewal on a hit,
// corruption, the key namespace, the circuit breaker across an outage, a
// restart, and bounded times. (The Store contract is store_contract_test.cpp.)
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
#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;
using test::make_entry;

std::unique_ptr<RedisStore> open_store(RedisConnection::Options options, std::chrono::seconds ttl = 60s) {
  return std::make_unique<RedisStore>(std::make_shared<RedisConnection>(options), RedisStore::Options{.ttl = ttl});
}

class RedisStoreTest : public test::RedisServerTest {
 protected:
  // A backoff long enough that no probe comes while a test looks at the open
  // breaker, however slowly it runs; the tests that wait for it to pass poll.
  RedisConnection::Options options() const {
    RedisConnection::Options o = server_.connection_options();
    o.breaker = {.failures_to_open = 2, .backoff_initial = 3s, .backoff_max = 3s};
    return o;
  }

  std::unique_ptr<RedisStore> open(std::chrono::seconds ttl = 60s) { return open_store(options(), ttl); }
};

TEST_F(RedisStoreTest, EntriesCarryTheirTimeToLiveAndExpire) {
  // Long enough to be still there when looked at, however slowly this runs.
  auto store = open(3s);
  CacheEntry entry = make_entry(key_for(1), "short-lived");
  ASSERT_TRUE(store->put(entry).ok());
  const std::string ttl = server_.command({"PTTL", store->entry_key(entry.key)});
  EXPECT_GT(std::stoll(ttl), 0);
  EXPECT_LE(std::stoll(ttl), 3000);
  EXPECT_TRUE(store->get(entry.key).value().has_value());  // a hit: 3 s from now
  std::this_thread::sleep_for(3200ms);  // letting the time to live pass
  EXPECT_FALSE(store->get(entry.key).value().has_value());
}

TEST_F(RedisStoreTest, HitRenewsTheTimeToLive) {
  auto store = open();  // ttl 60 s
  CacheEntry entry = make_entry(key_for(1), "used every day");
  ASSERT_TRUE(store->put(entry).ok());
  const std::string stored = store->entry_key(entry.key);
  // Ages the entry instead of waiting for it to age: ten seconds left to live.
  ASSERT_EQ(server_.command({"PEXPIRE", stored, "10000"}), "1");
  const auto hit = std::chrono::steady_clock::now();
  ASSERT_TRUE(store->get(entry.key).value().has_value());
  const long long ttl_ms = std::stoll(server_.command({"PTTL", stored}));
  // 60 s from the hit, less the time since (however long it was).
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - hit);
  EXPECT_GE(ttl_ms, 60'000 - since.count() - 1);
  EXPECT_LE(ttl_ms, 60'000);
  EXPECT_EQ(store->stats().hits, 1u);
  EXPECT_EQ(store->stats().errors, 0u);
}

TEST_F(RedisStoreTest, MissCreatesNoKey) {
  auto store = open();
  EXPECT_FALSE(store->get(key_for(1)).value().has_value());
  EXPECT_EQ(server_.command({"EXISTS", store->entry_key(key_for(1))}), "0");
  EXPECT_EQ(server_.command({"DBSIZE"}), "0");
  EXPECT_EQ(store->stats().misses, 1u);
}

TEST_F(RedisStoreTest, CorruptValueIsRemovedCountedAndMisses) {
  auto store = open();
  const std::string key = key_for(1);
  std::string encoded = encode_entry(make_entry(key, "payload"));
  encoded[encoded.size() - 2] ^= 1;
  ASSERT_EQ(server_.command({"SET", store->entry_key(key), encoded}), "OK");
  Result<std::optional<CacheEntry>> got = store->get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(store->stats().corruptions, 1u);
  EXPECT_EQ(server_.command({"EXISTS", store->entry_key(key)}), "0");
}

TEST_F(RedisStoreTest, ListShowsOnlyItsOwnKeys) {
  auto store = open();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->put(make_entry(key_for(i), "p")).ok());
  ASSERT_EQ(server_.command({"SET", "unrelated", "x"}), "OK");
  Result<std::vector<StoredKey>> listed = store->list();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 5u);
  for (const StoredKey& k : *listed) EXPECT_EQ(k.key.size(), 64u);
}

TEST_F(RedisStoreTest, OutageOpensTheBreakerAndRecoveryClosesIt) {
  auto store = open();
  CacheEntry entry = make_entry(key_for(1), "payload");
  ASSERT_TRUE(store->put(entry).ok());
  server_.stop();

  // Failures until the breaker opens, then requests are skipped without
  // touching the network.
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(store->get(entry.key).ok());
  EXPECT_TRUE(store->breaker_open());
  const uint64_t skipped_before = store->stats().skipped;
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<CacheEntry>> skipped = store->get(entry.key);
  EXPECT_FALSE(skipped.ok());
  EXPECT_EQ(skipped.error().code, ErrorCode::unavailable);
  // Nothing waited on the network (the margin is for a loaded machine), and
  // the get was counted skipped, not as a third error.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  StoreStats down = store->stats();
  EXPECT_EQ(down.errors, 2u);
  EXPECT_EQ(down.skipped, skipped_before + 1);

  ASSERT_TRUE(server_.start());  // empty: no persistence
  // Past the backoff the next request is the probe, and it succeeds.
  EXPECT_TRUE(test::eventually([&] { return store->put(entry).ok(); }));
  EXPECT_FALSE(store->breaker_open());
  EXPECT_TRUE(store->get(entry.key).value().has_value());
}

TEST_F(RedisStoreTest, RestartBetweenRequestsCostsNoFailure) {
  auto store = open();
  ASSERT_TRUE(store->put(make_entry(key_for(1), "p")).ok());  // leaves a pooled connection
  server_.stop();
  ASSERT_TRUE(server_.start());
  EXPECT_TRUE(store->put(make_entry(key_for(1), "p")).ok());
  EXPECT_EQ(store->stats().errors, 0u);
}

TEST_F(RedisStoreTest, EntriesOfOtherFormatVersionsAreNeitherReadNorRemoved) {
  // A fleet upgrading kjit shares one Redis between two entry formats.
  auto store = open();
  const std::string key = key_for(3);
  const std::string format1_key = "kjit:entry:" + key;  // where format 1 kept it
  const std::string newer_key = "kjit:v999:entry:" + key;
  ASSERT_EQ(server_.command({"SET", format1_key, "an older kjit's entry"}), "OK");
  ASSERT_EQ(server_.command({"SET", newer_key, "a newer kjit's entry"}), "OK");
  Result<std::optional<CacheEntry>> got = store->get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(store->stats().corruptions, 0u);
  EXPECT_EQ(server_.command({"EXISTS", format1_key}), "1");
  EXPECT_EQ(server_.command({"EXISTS", newer_key}), "1");
  EXPECT_NE(store->entry_key(key).find(":v" + std::to_string(k_entry_format_version) + ":"), std::string::npos);
}

TEST_F(RedisStoreTest, OperationTimeoutBoundsAStalledServer) {
  RedisConnection::Options o = options();
  o.operation_timeout = 100ms;
  auto store = open_store(o);
  ASSERT_TRUE(store->put(make_entry(key_for(1), "p")).ok());
  // Paused far longer than the store may wait: only its timeout ends the get.
  ASSERT_EQ(server_.command({"CLIENT", "PAUSE", "30000", "ALL"}), "OK");
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<CacheEntry>> got = store->get(key_for(1));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::deadline_exceeded) << got.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
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
  RedisConnection::Options o;
  o.host = "127.0.0.1";
  o.port = stalled.port();
  o.connect_timeout = 100ms;
  o.operation_timeout = 200ms;
  auto store = open_store(o);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(store->get(key_for(1)).ok());
  // Without the timeout the connect would wait out the SYN retries (over a
  // minute); the margin is for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace kjit
