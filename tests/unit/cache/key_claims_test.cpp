// Claims (KeyClaims): one holder per key among concurrent callers, waiters
// that get the result or take the claim over when its holder gives it up,
// never waiting past their bound, refused past the bounds; across daemons
// sharing leases (the in-memory fake, and Redis): one holder in the fleet, a
// dead daemon's claim lapsing with its lease, claims in one daemon only
// while the store is down.
#include "cache/key_claims.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "cache/redis_leases.h"
#include "fake_leases.h"
#include "redis_server.h"
#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::function<bool()> k_stay = [] { return false; };

KeyClaims::Options fast(std::string owner, std::chrono::milliseconds ttl = 5'000ms) {
  KeyClaims::Options options;
  options.owner = std::move(owner);
  options.lease_ttl = ttl;
  options.poll_interval = 10ms;
  options.check_interval = 20ms;
  return options;
}

// The result of the work a claim stands for, as a caller would look for it.
struct Result_ {
  std::atomic<bool> there{false};
  std::function<bool()> landed() {
    return [this] { return there.load(); };
  }
};

TEST(KeyClaims, OneCallerHoldsAndTheOthersGetItsResult) {
  KeyClaims claims(nullptr, fast("a"));
  Result_ result;
  std::atomic<int> claimed{0}, landed{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i)
    callers.emplace_back([&] {
      ClaimOutcome outcome = claims.claim("k", "ns", 30s, {}, result.landed(), k_stay);
      if (outcome.answer == ClaimAnswer::landed) ++landed;
      if (outcome.answer != ClaimAnswer::claimed) return;
      ++claimed;
      // The work ends once every other caller waits for it.
      EXPECT_TRUE(test::eventually([&] { return claims.waiting("k") == 7; }));
      result.there = true;
      claims.fulfil("k");
      EXPECT_EQ(outcome.claim->wait_end(k_stay, 10ms), ClaimEnd::fulfilled);
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(claimed, 1);
  EXPECT_EQ(landed, 7);
  EXPECT_EQ(claims.held(), 0u);
}

TEST(KeyClaims, AWaiterNeverWaitsPastItsBound) {
  KeyClaims claims(nullptr, fast("a"));
  Result_ result;
  ClaimOutcome holder = claims.claim("k", "ns", 0ms, {}, result.landed(), k_stay);
  ASSERT_EQ(holder.answer, ClaimAnswer::claimed);
  EXPECT_FALSE(holder.claim->fleet());
  const Clock::time_point start = Clock::now();
  ClaimOutcome waiter = claims.claim("k", "ns", 300ms, {}, result.landed(), k_stay);
  const auto took = Clock::now() - start;
  EXPECT_EQ(waiter.answer, ClaimAnswer::timed_out);
  EXPECT_TRUE(waiter.waited);
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 3s);
  // Without a wait: at once.
  EXPECT_EQ(claims.claim("k", "ns", 0ms, {}, result.landed(), k_stay).answer, ClaimAnswer::timed_out);
  // Another key: a claim of its own (a scope only bounds; its keys name it).
  EXPECT_EQ(claims.claim("other", "ns", 0ms, {}, result.landed(), k_stay).answer, ClaimAnswer::claimed);
}

TEST(KeyClaims, AClaimGivenUpGoesToAWaiter) {
  for (const char* how : {"failed", "released", "stopped", "destroyed"}) {
    KeyClaims claims(nullptr, fast("a"));
    Result_ result;
    ClaimOutcome holder = claims.claim("k", "ns", 0ms, {}, result.landed(), k_stay);
    ASSERT_EQ(holder.answer, ClaimAnswer::claimed) << how;
    std::atomic<bool> waiting_done{false};
    ClaimOutcome waiter;
    std::thread next([&] {
      waiter = claims.claim("k", "ns", 30s, {}, result.landed(), k_stay);
      waiting_done = true;
    });
    ASSERT_TRUE(test::eventually([&] { return claims.waiting("k") == 1; })) << how;
    EXPECT_FALSE(waiting_done) << how;
    const std::string what = how;
    if (what == "failed" || what == "released") {
      EXPECT_FALSE(claims.release(holder.claim->id(), "another-ns", true)) << "not that scope's claim";
      EXPECT_TRUE(claims.release(holder.claim->id(), "ns", what == "failed"));
      EXPECT_EQ(holder.claim->wait_end(k_stay, 10ms), what == "failed" ? ClaimEnd::failed : ClaimEnd::released);
      EXPECT_FALSE(claims.release(holder.claim->id(), "ns", false)) << "ended already";
    } else if (what == "stopped") {
      EXPECT_EQ(holder.claim->wait_end([] { return true; }, 10ms), ClaimEnd::stopped);
    }
    holder.claim.reset();
    next.join();
    EXPECT_EQ(waiter.answer, ClaimAnswer::claimed) << how;
    EXPECT_TRUE(waiter.waited) << how;
    EXPECT_LT(waiter.waited_for, 5s) << how;
  }
}

TEST(KeyClaims, AWaiterWhoseCallerLeftStopsWaiting) {
  KeyClaims claims(nullptr, fast("a"));
  Result_ result;
  ClaimOutcome holder = claims.claim("k", "ns", 0ms, {}, result.landed(), k_stay);
  std::atomic<bool> left{false};
  std::thread leave([&] {
    EXPECT_TRUE(test::eventually([&] { return claims.waiting("k") == 1; }));
    left = true;
  });
  const Clock::time_point start = Clock::now();
  ClaimOutcome waiter = claims.claim("k", "ns", 30s, {}, result.landed(), [&] { return left.load(); });
  leave.join();
  EXPECT_EQ(waiter.answer, ClaimAnswer::timed_out);
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(KeyClaims, WaitersAndClaimsAreBounded) {
  KeyClaims claims(nullptr, fast("a"));
  Result_ result;
  ClaimBounds bounds{.max_waiters_per_key = 1, .max_waiters_per_scope = 2, .max_claims_per_scope = 2};
  ClaimOutcome a = claims.claim("a", "ns", 0ms, bounds, result.landed(), k_stay);
  ClaimOutcome b = claims.claim("b", "ns", 0ms, bounds, result.landed(), k_stay);
  ASSERT_EQ(a.answer, ClaimAnswer::claimed);
  ASSERT_EQ(b.answer, ClaimAnswer::claimed);
  ClaimOutcome c = claims.claim("c", "ns", 0ms, bounds, result.landed(), k_stay);
  EXPECT_EQ(c.answer, ClaimAnswer::refused);
  EXPECT_EQ(c.refused_by, ClaimOutcome::Bound::claims_per_scope);
  EXPECT_EQ(c.bound, 2u);

  std::vector<std::thread> waiters;
  for (const char* key : {"a", "b"})
    waiters.emplace_back([&, key] {
      EXPECT_EQ(claims.claim(key, "ns", 30s, bounds, result.landed(), k_stay).answer, ClaimAnswer::landed);
    });
  ASSERT_TRUE(test::eventually([&] { return claims.waiting("a") == 1 && claims.waiting("b") == 1; }));
  ClaimOutcome over_key = claims.claim("a", "ns", 30s, bounds, result.landed(), k_stay);
  EXPECT_EQ(over_key.answer, ClaimAnswer::refused);
  EXPECT_EQ(over_key.refused_by, ClaimOutcome::Bound::waiters_per_key);
  ClaimBounds wider = bounds;
  wider.max_waiters_per_key = 8;
  ClaimOutcome over_scope = claims.claim("a", "ns", 30s, wider, result.landed(), k_stay);
  EXPECT_EQ(over_scope.answer, ClaimAnswer::refused);
  EXPECT_EQ(over_scope.refused_by, ClaimOutcome::Bound::waiters_per_scope);
  // Another scope has bounds of its own.
  EXPECT_EQ(claims.claim("c", "other", 0ms, bounds, result.landed(), k_stay).answer, ClaimAnswer::claimed);

  result.there = true;
  claims.fulfil("a");
  claims.fulfil("b");
  for (std::thread& t : waiters) t.join();
}

// Daemons sharing one lease store: each a KeyClaims of its own.
TEST(KeyClaims, OneHolderAcrossDaemonsSharingLeases) {
  auto leases = std::make_shared<test::FakeLeases>();
  KeyClaims a(leases, fast("daemon-a"));
  KeyClaims b(leases, fast("daemon-b"));
  Result_ result;  // in the tier the daemons share
  ClaimOutcome holder = a.claim("k", "ns", 0ms, {}, result.landed(), k_stay);
  ASSERT_EQ(holder.answer, ClaimAnswer::claimed);
  EXPECT_TRUE(holder.claim->fleet());
  EXPECT_EQ(b.claim("k", "ns", 0ms, {}, result.landed(), k_stay).answer, ClaimAnswer::timed_out);

  std::vector<std::thread> waiters;
  std::atomic<int> landed{0};
  for (int i = 0; i < 4; ++i)
    waiters.emplace_back([&] {
      if (b.claim("k", "ns", 30s, {}, result.landed(), k_stay).answer == ClaimAnswer::landed) ++landed;
    });
  ASSERT_TRUE(test::eventually([&] { return b.waiting("k") == 4; }));
  result.there = true;
  a.fulfil("k");
  EXPECT_EQ(holder.claim->wait_end(k_stay, 10ms), ClaimEnd::fulfilled);
  holder.claim.reset();  // drops the lease: b's watcher sees it gone, and the result
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(landed, 4);
}

TEST(KeyClaims, ADeadDaemonsClaimLapsesWithItsLease) {
  auto leases = std::make_shared<test::FakeLeases>();
  KeyClaims a(leases, fast("daemon-a", 300ms));
  KeyClaims b(leases, fast("daemon-b", 300ms));
  Result_ result;
  ClaimOutcome holder = a.claim("k", "ns", 0ms, {}, result.landed(), k_stay);
  ASSERT_EQ(holder.answer, ClaimAnswer::claimed);
  // Renewed while held: waited for past several TTLs, still a's.
  EXPECT_EQ(b.claim("k", "ns", 900ms, {}, result.landed(), k_stay).answer, ClaimAnswer::timed_out);
  // a can no longer reach the store (as if it had died): its lease lapses.
  leases->cut_off("daemon-a");
  const Clock::time_point start = Clock::now();
  ClaimOutcome next = b.claim("k", "ns", 30s, {}, result.landed(), k_stay);
  EXPECT_EQ(next.answer, ClaimAnswer::claimed);
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(KeyClaims, WithoutTheStoreClaimsHoldInOneDaemon) {
  auto leases = std::make_shared<test::FakeLeases>();
  leases->set_available(false);
  KeyClaims a(leases, fast("daemon-a"));
  Result_ result;
  ClaimOutcome holder = a.claim("k", "ns", 0ms, {}, result.landed(), k_stay);
  ASSERT_EQ(holder.answer, ClaimAnswer::claimed);
  EXPECT_FALSE(holder.claim->fleet());
  EXPECT_EQ(a.claim("k", "ns", 0ms, {}, result.landed(), k_stay).answer, ClaimAnswer::timed_out);
  // Back: the next claim is the fleet's again.
  leases->set_available(true);
  ClaimOutcome other = a.claim("other", "ns", 0ms, {}, result.landed(), k_stay);
  ASSERT_EQ(other.answer, ClaimAnswer::claimed);
  EXPECT_TRUE(other.claim->fleet());
}

class KeyClaimsRedisTest : public test::RedisServerTest {};

TEST_F(KeyClaimsRedisTest, OneHolderAcrossDaemonsSharingRedis) {
  auto leases_a = std::make_shared<RedisLeases>(std::make_shared<RedisConnection>(server_.connection_options()));
  auto leases_b = std::make_shared<RedisLeases>(std::make_shared<RedisConnection>(server_.connection_options()));
  KeyClaims a(leases_a, fast("daemon-a"));
  KeyClaims b(leases_b, fast("daemon-b"));
  Result_ result;
  std::atomic<int> claimed{0}, landed{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 6; ++i)
    callers.emplace_back([&, i] {
      KeyClaims& claims = i % 2 ? b : a;
      ClaimOutcome outcome = claims.claim("k", "ns", 30s, {}, result.landed(), k_stay);
      if (outcome.answer == ClaimAnswer::landed) ++landed;
      if (outcome.answer != ClaimAnswer::claimed) return;
      ++claimed;
      EXPECT_TRUE(test::eventually([&] { return a.waiting("k") + b.waiting("k") == 5; }));
      result.there = true;
      claims.fulfil("k");
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(claimed, 1);
  EXPECT_EQ(landed, 5);
}

}  // namespace
}  // namespace kjit
