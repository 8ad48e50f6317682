// The breaker's states: closed, open after repeated failures, one probe
// after the backoff, doubled backoff on a failed probe, closed on success.
#include "cache/circuit_breaker.h"

#include <gtest/gtest.h>

#include <chrono>

#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How long after `since` the breaker first allows a request: polled until
// it does (the probe it then lets through stays open until recorded). A
// probe let through before the backoff shows as a shorter time. Measured
// from before the failure that set the backoff, so a thread descheduled on
// a loaded machine can only lengthen it, never shorten it.
Clock::duration until_allowed(CircuitBreaker& breaker, Clock::time_point since) {
  EXPECT_TRUE(test::eventually([&] { return breaker.allow(); }, 10s, 1ms)) << "no probe after the backoff";
  return Clock::now() - since;
}

TEST(CircuitBreaker, OpensAfterConsecutiveFailuresAndProbesAfterBackoff) {
  CircuitBreaker breaker({.failures_to_open = 2, .backoff_initial = 60ms, .backoff_max = 1s});
  EXPECT_TRUE(breaker.allow());
  breaker.record_failure();
  EXPECT_FALSE(breaker.is_open());
  breaker.record_success();  // resets the count
  breaker.record_failure();
  EXPECT_FALSE(breaker.is_open());
  const Clock::time_point opened = Clock::now();
  breaker.record_failure();
  EXPECT_TRUE(breaker.is_open());

  EXPECT_GE(until_allowed(breaker, opened), 60ms) << "probed before the backoff";  // the probe
  EXPECT_FALSE(breaker.allow());  // only one at a time
  const Clock::time_point probe_failed = Clock::now();
  breaker.record_failure();  // failed probe: backoff doubles to 120 ms
  EXPECT_GE(until_allowed(breaker, probe_failed), 120ms) << "the backoff did not double";
  breaker.record_success();
  EXPECT_FALSE(breaker.is_open());
  EXPECT_TRUE(breaker.allow());
  EXPECT_TRUE(breaker.allow());
}

}  // namespace
}  // namespace kjit
