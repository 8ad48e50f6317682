// Threads for request work that may block (compiles, disk and Redis
// lookups), kept off gRPC's event threads. A task never waits behind
// another: a thread is started when none is idle, and idle threads retire
// after a while, as gRPC's synchronous server did for every call.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace kjit {

class ElasticThreadPool {
 public:
  struct Options {
    size_t kept_threads = 2;                     // never retired
    std::chrono::milliseconds idle_retire{30'000};  // a thread idle this long above kept_threads exits
  };
  explicit ElasticThreadPool(Options options);
  // Runs every task already submitted, then joins every thread.
  ~ElasticThreadPool();
  ElasticThreadPool(const ElasticThreadPool&) = delete;
  ElasticThreadPool& operator=(const ElasticThreadPool&) = delete;

  // Runs task on a pool thread, starting one if none is idle. Tasks must
  // not throw. Submitting after destruction began is a bug.
  void submit(std::function<void()> task);

  size_t threads() const;  // alive now

 private:
  using Threads = std::list<std::thread>;
  void work(Threads::iterator self);
  void join_retired();  // with mutex_ held

  Options options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  Threads threads_;
  std::list<std::thread> retired_;  // exited or exiting, joined on the next submit
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace kjit
