// The breaker's states: closed, open after repeated failures, one probe
// after the backoff, doubled backoff on a failed probe, closed on success.
#include "cache/circuit_breaker.h"

#include <gtest/gtest.h>

#include <thread>

namespace kjit {
namespace {

using namespace std::chrono_literals;

TEST(CircuitBreaker, OpensAfterConsecutiveFailuresAndProbesAfterBackoff) {
  CircuitBreaker breaker({.failures_to_open = 2, .backoff_initial = 60ms, .backoff_max = 1s});
  EXPECT_TRUE(breaker.allow());
  breaker.record_failure();
  EXPECT_FALSE(breaker.is_open());
  breaker.record_success();  // resets the count
  breaker.record_failure();
  EXPECT_FALSE(breaker.is_open());
  breaker.record_failure();
  EXPECT_TRUE(breaker.is_open());
  EXPECT_FALSE(breaker.allow());

  std::this_thread::sleep_for(80ms);
  EXPECT_TRUE(breaker.allow());   // the probe
  EXPECT_FALSE(breaker.allow());  // only one at a time
  breaker.record_failure();       // failed probe: backoff doubles to 120 ms
  std::this_thread::sleep_for(80ms);
  EXPECT_FALSE(breaker.allow());
  std::this_thread::sleep_for(60ms);
  EXPECT_TRUE(breaker.allow());
  breaker.record_success();
  EXPECT_FALSE(breaker.is_open());
  EXPECT_TRUE(breaker.allow());
  EXPECT_TRUE(breaker.allow());
}

}  // namespace
}  // namespace kjit
