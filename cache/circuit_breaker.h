// A circuit breaker for a remote tier: after repeated failures requests are
// refused locally (no network wait) until a backoff passes; then one probe
// goes through, and its outcome closes the circuit or doubles the backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

namespace kjit {

class CircuitBreaker {
 public:
  struct Options {
    int failures_to_open = 3;  // consecutive failures
    std::chrono::milliseconds backoff_initial{1000};
    std::chrono::milliseconds backoff_max{30000};
  };

  explicit CircuitBreaker(Options options);

  // Whether a request may be sent now. Every true must be followed by
  // record_success or record_failure, or a half-open circuit stays shut.
  bool allow();
  void record_success();
  void record_failure();

  // True from the failure that opened the circuit until a probe succeeds.
  bool is_open() const { return open_.load(std::memory_order_relaxed); }

 private:
  using Clock = std::chrono::steady_clock;
  Options options_;
  std::atomic<bool> open_{false};  // read without the lock on the closed fast path
  std::mutex mutex_;
  // Written under the lock; read without it so a success on a healthy
  // circuit costs no lock.
  std::atomic<int> consecutive_failures_{0};
  bool probing_ = false;
  Clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_;
};

}  // namespace kjit
