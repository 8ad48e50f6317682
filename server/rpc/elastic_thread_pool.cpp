#include "server/rpc/elastic_thread_pool.h"

namespace kjit {

ElasticThreadPool::ElasticThreadPool(Options options) : options_(options) {}

ElasticThreadPool::~ElasticThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // Threads drain the queue before they see stopping_; none is added now.
  for (std::thread& t : threads_) t.join();
  for (std::thread& t : retired_) t.join();
}

void ElasticThreadPool::submit(std::function<void()> task) {
  std::unique_lock lock(mutex_);
  join_retired();
  tasks_.push_back(std::move(task));
  if (idle_ >= tasks_.size()) {
    lock.unlock();
    wake_.notify_one();
    return;
  }
  // Every idle thread already has a queued task to take: one more thread.
  threads_.emplace_front();
  threads_.front() = std::thread(&ElasticThreadPool::work, this, threads_.begin());
}

size_t ElasticThreadPool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

void ElasticThreadPool::join_retired() {
  for (std::thread& t : retired_) t.join();
  retired_.clear();
}

void ElasticThreadPool::work(Threads::iterator self) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (!tasks_.empty()) {
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      task = nullptr;  // whatever it captured is released outside the lock
      lock.lock();
      continue;
    }
    if (stopping_) return;
    ++idle_;
    const bool woken = wake_.wait_for(lock, options_.idle_retire, [this] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (!woken && threads_.size() > options_.kept_threads) {
      // Retire: hand our std::thread to retired_ so a later submit (or the
      // destructor) joins it; nothing touches it after this.
      retired_.splice(retired_.end(), threads_, self);
      return;
    }
  }
}

}  // namespace kjit
