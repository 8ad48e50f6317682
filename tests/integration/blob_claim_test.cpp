// Claims on blob groups (Client::claim_blob_group) through a real daemon:
// one holder, waiters that get the group its holder puts or take the claim
// a holder gives up, bounds on waiters, input checked at the edge, the
// counters; and one holder across two daemons sharing Redis. No toolkit
// needed: nothing compiles.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "kjit/client.h"
#include "redis_server.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

using namespace std::chrono_literals;

class BlobClaimTest : public ::testing::Test {
 protected:
  DaemonOptions daemon_options(const std::string& config = {}, std::vector<std::string> more = {}) {
    DaemonOptions options{{"--cache-dir", temp_.path() + "/cache-" + std::to_string(++daemons_)}};
    options.args.insert(options.args.end(), more.begin(), more.end());
    options.config = config;
    return options;
  }

  // The holder's compile: the member, then the group, which ends its claim.
  static void put_compiled(const Client& client, const std::string& key) {
    ASSERT_TRUE(client.put_blob("triton", key, "k.cubin", "the cubin of " + key));
    ASSERT_TRUE(client.put_blob_group("triton", key, "k.json", {"k.cubin"}));
  }

  TempDir temp_;
  int daemons_ = 0;
};

Result<BlobClaim> claim(const std::string& socket, const std::string& key, std::chrono::milliseconds wait) {
  return Client(socket).claim_blob_group("triton", key, "k.json", wait);
}

// Once the daemon has counted `waits` claim calls that wait.
bool waits_counted(const std::string& socket, uint64_t waits) {
  return eventually([&] {
    Result<CacheStats> stats = Client(socket).cache_stats();
    return stats && stats->blobs.claim_waits == waits;
  });
}

TEST_F(BlobClaimTest, OneCallerHoldsTheClaimAndTheOthersGetWhatItPuts) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  Result<BlobClaim> holder = client.claim_blob_group("triton", "K", "k.json", 0ms);
  ASSERT_TRUE(holder) << holder.error().message;
  ASSERT_EQ(holder->outcome(), BlobClaim::Outcome::claimed);
  EXPECT_EQ(holder->claim_id().size(), 32u);
  EXPECT_GT(holder->lease(), 0ms);
  EXPECT_FALSE(holder->fleet()) << "no Redis: held in this daemon";

  std::vector<std::future<Result<BlobClaim>>> waiters;
  for (int i = 0; i < 4; ++i)
    waiters.push_back(std::async(std::launch::async, [&] { return claim(daemon.socket_path(), "K", 30s); }));
  ASSERT_TRUE(waits_counted(daemon.socket_path(), 4));
  put_compiled(client, "K");
  for (auto& waiter : waiters) {
    Result<BlobClaim> got = waiter.get();
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->outcome(), BlobClaim::Outcome::hit);
    ASSERT_EQ(got->group().members.size(), 1u);
    EXPECT_EQ(got->group().members[0].data, "the cubin of K");
  }
  // The group is there now: a claim call answers it at once.
  Result<BlobClaim> later = claim(daemon.socket_path(), "K", 0ms);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->outcome(), BlobClaim::Outcome::hit);
  Result<CacheStats> stats = client.cache_stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->blobs.claims, 1u);
  EXPECT_EQ(stats->blobs.claim_hits, 5u);
  EXPECT_EQ(stats->blobs.claims_abandoned, 0u);
}

TEST_F(BlobClaimTest, AClaimGivenUpGoesToAWaiterAtOnce) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  uint64_t waits = 0;
  for (const char* how : {"destroyed", "released as failed"}) {
    const std::string key = std::string("K-") + how[0];
    std::optional<BlobClaim> holder;
    {
      Result<BlobClaim> taken = client.claim_blob_group("triton", key, "k.json", 0ms);
      ASSERT_TRUE(taken) << taken.error().message;
      ASSERT_EQ(taken->outcome(), BlobClaim::Outcome::claimed);
      holder.emplace(std::move(*taken));
    }
    auto waiter = std::async(std::launch::async, [&] { return claim(daemon.socket_path(), key, 30s); });
    ASSERT_TRUE(waits_counted(daemon.socket_path(), ++waits)) << how;
    const auto start = std::chrono::steady_clock::now();
    if (std::string(how) == "destroyed")
      holder.reset();  // as a caller that throws
    else
      ASSERT_TRUE(holder->release(true));
    Result<BlobClaim> next = waiter.get();
    ASSERT_TRUE(next) << next.error().message;
    EXPECT_EQ(next->outcome(), BlobClaim::Outcome::claimed) << how;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << how;
  }
  // The two holders, and the two claims the waiters took and dropped (each
  // seen ending as its call ends).
  EXPECT_TRUE(eventually([&] {
    Result<CacheStats> stats = client.cache_stats();
    return stats && stats->blobs.claims_abandoned == 4;
  }));
}

TEST_F(BlobClaimTest, AWaiterNeverWaitsPastItsBound) {
  TestDaemon daemon(daemon_options());
  Result<BlobClaim> holder = claim(daemon.socket_path(), "K", 0ms);
  ASSERT_TRUE(holder);
  ASSERT_EQ(holder->outcome(), BlobClaim::Outcome::claimed);
  const auto start = std::chrono::steady_clock::now();
  Result<BlobClaim> waiter = claim(daemon.socket_path(), "K", 500ms);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(waiter) << waiter.error().message;
  EXPECT_EQ(waiter->outcome(), BlobClaim::Outcome::timed_out);
  EXPECT_GE(took, 500ms);
  EXPECT_LT(took, 10s);
}

TEST_F(BlobClaimTest, WaitersPastTheBoundAreRefusedAndBadInputIsInvalidArgument) {
  TestDaemon daemon(daemon_options("[limits]\nmax_claim_waiters_per_key = 1\nmax_claim_wait_ms = 60000\n"));
  Client client(daemon.socket_path());
  Result<BlobClaim> holder = claim(daemon.socket_path(), "K", 0ms);
  ASSERT_TRUE(holder);
  auto first = std::async(std::launch::async, [&] { return claim(daemon.socket_path(), "K", 30s); });
  ASSERT_TRUE(waits_counted(daemon.socket_path(), 1));
  Result<BlobClaim> second = claim(daemon.socket_path(), "K", 30s);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::resource_exhausted) << second.error().message;
  EXPECT_NE(second.error().message.find("max_claim_waiters_per_key"), std::string::npos) << second.error().message;

  struct Bad {
    std::string ns, key, group;
    std::chrono::milliseconds wait;
  };
  for (const Bad& bad : {Bad{"", "K", "g", 0ms}, Bad{"ns", std::string(300, 'k'), "g", 0ms},
                         Bad{"ns", "K", "../g", 0ms}, Bad{"ns", "K", "g", 60'001ms}}) {
    Result<BlobClaim> refused = client.claim_blob_group(bad.ns, bad.key, bad.group, bad.wait);
    ASSERT_FALSE(refused) << bad.group;
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << refused.error().message;
  }
  put_compiled(client, "K");
  Result<BlobClaim> got = first.get();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->outcome(), BlobClaim::Outcome::hit);
  Result<CacheStats> stats = client.cache_stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->blobs.claims_refused, 1u);
}

TEST_F(BlobClaimTest, OneHolderAcrossDaemonsSharingRedis) {
  if (!RedisServer::installed()) GTEST_SKIP() << "redis-server is not installed";
  RedisServer redis;
  ASSERT_TRUE(redis.start());
  const std::string address = "127.0.0.1:" + std::to_string(redis.port());
  TestDaemon a(daemon_options({}, {"--redis", address}));
  TestDaemon b(daemon_options({}, {"--redis", address}));
  Result<BlobClaim> holder = claim(a.socket_path(), "K", 0ms);
  ASSERT_TRUE(holder) << holder.error().message;
  ASSERT_EQ(holder->outcome(), BlobClaim::Outcome::claimed);
  EXPECT_TRUE(holder->fleet());
  Result<BlobClaim> elsewhere = claim(b.socket_path(), "K", 0ms);
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->outcome(), BlobClaim::Outcome::timed_out) << "b sees a's claim";

  auto waiter = std::async(std::launch::async, [&] { return claim(b.socket_path(), "K", 30s); });
  ASSERT_TRUE(waits_counted(b.socket_path(), 1));
  put_compiled(Client(a.socket_path()), "K");
  Result<BlobClaim> got = waiter.get();
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->outcome(), BlobClaim::Outcome::hit) << "from the Redis tier";
  EXPECT_EQ(got->group().members.at(0).data, "the cubin of K");
}

}  // namespace
}  // namespace kjit::test
