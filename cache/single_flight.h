// In-process single flight: concurrent callers with the same key share one
// computation; the first runs it, the others wait for its result.
#pragma once

#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace kjit {

template <typename T>
class SingleFlight {
 public:
  struct Outcome {
    T value;
    bool shared = false;  // true for callers that waited on another caller's computation
  };

  // Runs compute() unless a call for key is already running, in which case
  // waits for that call and returns a copy of its value (or rethrows its
  // exception). T should be cheap to copy: every waiter gets one.
  template <typename Compute>
  Outcome run(const std::string& key, Compute&& compute) {
    std::promise<T> promise;
    {
      std::unique_lock lock(mutex_);
      if (auto it = calls_.find(key); it != calls_.end()) {
        std::shared_future<T> running = it->second;
        lock.unlock();
        return Outcome{running.get(), true};
      }
      calls_.emplace(key, promise.get_future().share());
    }
    std::optional<T> value;
    try {
      value.emplace(std::forward<Compute>(compute)());
    } catch (...) {
      promise.set_exception(std::current_exception());
      finish(key);
      throw;
    }
    // Published before the key is released, so a caller arriving in between
    // takes the finished value instead of starting a second computation.
    promise.set_value(*value);
    finish(key);
    return Outcome{std::move(*value), false};
  }

  // Keys being computed now.
  size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return calls_.size();
  }

 private:
  void finish(const std::string& key) {
    std::lock_guard lock(mutex_);
    calls_.erase(key);
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<T>> calls_;
};

}  // namespace kjit
