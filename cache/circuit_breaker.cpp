// Closed → open (after failures_to_open) → half-open probe → closed or open
// with a doubled backoff (see circuit_breaker.h).
#include "cache/circuit_breaker.h"

#include <algorithm>

namespace kjit {

CircuitBreaker::CircuitBreaker(Options options) : options_(options), backoff_(options.backoff_initial) {}

bool CircuitBreaker::allow() {
  if (!open_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(mutex_);
  if (!open_.load(std::memory_order_relaxed)) return true;
  if (probing_ || Clock::now() < retry_at_) return false;
  probing_ = true;
  return true;
}

void CircuitBreaker::record_success() {
  if (!open_.load(std::memory_order_acquire) && consecutive_failures_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(mutex_);
  consecutive_failures_ = 0;
  probing_ = false;
  backoff_ = options_.backoff_initial;
  open_.store(false, std::memory_order_release);
}

void CircuitBreaker::record_failure() {
  std::lock_guard lock(mutex_);
  ++consecutive_failures_;
  if (open_.load(std::memory_order_relaxed)) {
    // A failed probe, or a request that was already in flight when the
    // circuit opened: wait longer before the next try.
    if (probing_) backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    probing_ = false;
    retry_at_ = Clock::now() + backoff_;
    return;
  }
  if (consecutive_failures_.load(std::memory_order_relaxed) >= options_.failures_to_open) {
    retry_at_ = Clock::now() + backoff_;
    open_.store(true, std::memory_order_release);
  }
}

}  // namespace kjit
