// One thread running writes behind answers, bounded in bytes (see write_behind_queue.h).
#include "cache/write_behind_queue.h"

#include <utility>

namespace kjit {

WriteBehindQueue::WriteBehindQueue(uint64_t max_bytes) : max_bytes_(max_bytes), thread_([this] { run(); }) {}

WriteBehindQueue::~WriteBehindQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

bool WriteBehindQueue::push(uint64_t bytes, Write write) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queued_bytes_ + bytes > max_bytes_) return false;
    queued_bytes_ += bytes;
    ++pushed_;
    queue_.push_back(Queued{bytes, std::move(write)});
  }
  changed_.notify_all();
  return true;
}

void WriteBehindQueue::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every queued write has run
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    next.write();
    // What the write held (an entry, its bytes) is let go outside the lock.
    next.write = nullptr;
    lock.lock();
    queued_bytes_ -= next.bytes;
    ++done_;
    changed_.notify_all();
  }
}

void WriteBehindQueue::flush() {
  std::unique_lock lock(mutex_);
  const uint64_t target = pushed_;
  changed_.wait(lock, [&] { return done_ >= target; });
}

size_t WriteBehindQueue::length() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace kjit
