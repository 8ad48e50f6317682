// Writes made behind an answer, so that the caller is not kept waiting for
// them: one thread runs the queued writes in order, the queue bounded in
// bytes. Past the bound a write is dropped, not waited for (a cache write
// that does not happen costs a later miss, never a wrong answer); the caller
// counts what it drops. The REAPI tier's uploads and the tiered cache's fills
// of the tiers above a remote hit both go through one of these.
//
// Thread-safe. A write runs on the queue's thread: it must not call flush()
// on its own queue, and it reports its own failure (counts, logs), since
// nobody waits for it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace kjit {

class WriteBehindQueue {
 public:
  using Write = std::function<void()>;

  // max_bytes bounds what the queued writes hold, by the sizes push() names.
  explicit WriteBehindQueue(uint64_t max_bytes);
  // Runs every write still queued, then stops: bounded by the writes' own
  // times (each store's timeouts), so stopping never loses what was queued
  // before it.
  ~WriteBehindQueue();
  WriteBehindQueue(const WriteBehindQueue&) = delete;
  WriteBehindQueue& operator=(const WriteBehindQueue&) = delete;

  // Queues write, which holds `bytes` until it has run. False, with nothing
  // queued, when that would pass the bound (or the queue is stopping): the
  // write is dropped.
  bool push(uint64_t bytes, Write write);

  // Blocks until every write queued before the call has run.
  void flush();

  // Writes waiting now (not counting the one running).
  size_t length() const;

 private:
  struct Queued {
    uint64_t bytes;
    Write write;
  };

  void run();

  const uint64_t max_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  uint64_t queued_bytes_ = 0;
  uint64_t pushed_ = 0, done_ = 0;  // writes queued and run, for flush()
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above is in place
};

}  // namespace kjit
