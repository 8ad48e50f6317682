// Compile leases in a real redis-server: one owner, release and renewal by
// the owner only, expiry of a crashed owner's lease, and Redis down told
// apart from a lost lease.
#include "cache/redis_leases.h"

#include <gtest/gtest.h>

#include "redis_server.h"
#include "sample_entries.h"
#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;

class RedisLeasesTest : public test::RedisServerTest {
 protected:
  std::shared_ptr<RedisConnection> redis_ = std::make_shared<RedisConnection>(server_.connection_options());
  RedisLeases leases_{redis_};
};

TEST_F(RedisLeasesTest, LeaseHasOneOwnerAndOnlyTheOwnerReleasesIt) {
  const std::string key = key_for(1);
  EXPECT_EQ(leases_.try_acquire(key, "daemon-a", 10s), LeaseOutcome::acquired);
  EXPECT_EQ(leases_.try_acquire(key, "daemon-b", 10s), LeaseOutcome::held_by_other);
  EXPECT_EQ(leases_.holder(key).value(), std::optional<std::string>("daemon-a"));
  ASSERT_TRUE(leases_.release(key, "daemon-b").ok());  // not b's to release
  EXPECT_EQ(leases_.try_acquire(key, "daemon-b", 10s), LeaseOutcome::held_by_other);
  ASSERT_TRUE(leases_.release(key, "daemon-a").ok());
  EXPECT_EQ(leases_.holder(key).value(), std::nullopt);
  EXPECT_EQ(leases_.try_acquire(key, "daemon-b", 10s), LeaseOutcome::acquired);
}

TEST_F(RedisLeasesTest, LeaseExpiresSoACrashedOwnerCannotBlock) {
  const std::string key = key_for(1);
  // Long enough to be still held at the next call however slowly this runs.
  EXPECT_EQ(leases_.try_acquire(key, "crashed", 2s), LeaseOutcome::acquired);
  EXPECT_EQ(leases_.try_acquire(key, "other", 10s), LeaseOutcome::held_by_other);
  // Nobody renews or releases it: it expires, and another may take it.
  EXPECT_TRUE(test::eventually([&] { return leases_.try_acquire(key, "other", 10s) == LeaseOutcome::acquired; }))
      << "the crashed owner's lease never expired";
  // The expired owner's late release must not drop the new owner's lease.
  ASSERT_TRUE(leases_.release(key, "crashed").ok());
  EXPECT_EQ(leases_.holder(key).value(), std::optional<std::string>("other"));
}

TEST_F(RedisLeasesTest, OwnerRenewsItsLease) {
  const std::string key = key_for(1);
  ASSERT_EQ(leases_.try_acquire(key, "daemon-a", 500ms), LeaseOutcome::acquired);
  const auto renewing = std::chrono::steady_clock::now();
  Status renewed = leases_.renew(key, "daemon-a", 10s);
  ASSERT_TRUE(renewed.ok()) << renewed.error().message;
  const long long ttl_ms = std::stoll(server_.command({"PTTL", leases_.lease_key(key)}));
  // 10 s from the renewal, less the time since (however long it was).
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - renewing);
  EXPECT_GE(ttl_ms, 10'000 - since.count() - 1);
  EXPECT_LE(ttl_ms, 10'000);
  EXPECT_EQ(leases_.holder(key).value(), std::optional<std::string>("daemon-a"));
}

TEST_F(RedisLeasesTest, OnlyTheOwnerRenewsALease) {
  const std::string key = key_for(1);
  // Long enough to be still held when looked at, however slowly this runs.
  ASSERT_EQ(leases_.try_acquire(key, "daemon-a", 5s), LeaseOutcome::acquired);
  Status renewed = leases_.renew(key, "daemon-b", 60s);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.error().code, ErrorCode::not_found) << renewed.error().message;
  const long long ttl_ms = std::stoll(server_.command({"PTTL", leases_.lease_key(key)}));
  EXPECT_GT(ttl_ms, 0);
  EXPECT_LE(ttl_ms, 5'000);
  EXPECT_EQ(leases_.holder(key).value(), std::optional<std::string>("daemon-a"));
  EXPECT_EQ(redis_->errors(), 0u);  // a lost lease is not a Redis failure
}

TEST_F(RedisLeasesTest, RenewingAMissingLeaseFailsAndCreatesNothing) {
  const std::string key = key_for(1);
  Status renewed = leases_.renew(key, "daemon-a", 10s);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.error().code, ErrorCode::not_found) << renewed.error().message;
  EXPECT_EQ(server_.command({"EXISTS", leases_.lease_key(key)}), "0");
}

// The renewer keeps trying through an outage but gives up on a lost lease,
// so the two must be told apart.
TEST_F(RedisLeasesTest, RenewingALeaseWhileRedisIsDownIsNotALostLease) {
  server_.stop();
  Status renewed = leases_.renew(key_for(1), "daemon-a", 10s);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.error().code, ErrorCode::unavailable) << renewed.error().message;
}

TEST_F(RedisLeasesTest, LeaseIsUnavailableWhileRedisIsDown) {
  server_.stop();
  EXPECT_EQ(leases_.try_acquire(key_for(1), "a", 1s), LeaseOutcome::unavailable);
}

}  // namespace
}  // namespace kjit
