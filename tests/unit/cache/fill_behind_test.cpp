// A Redis or REAPI hit answered before the tiers above it are filled: the
// fill goes behind the answer through a bounded WriteBehindQueue, is made
// afterwards, never replaces what a put stored meanwhile, and is dropped and
// counted when the queue is full. Stores whose puts block until released
// show the order; MemoryStores stand in for the remote tiers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cache/memory_store.h"
#include "cache/tiered_cache.h"
#include "cache/write_behind_queue.h"
#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;

// Long enough for a loaded CI machine; only reached when the code is wrong
// (a get that waits for its fill), and then it fails instead of hanging.
constexpr auto k_deadlock_guard = 30s;

std::string key_for(int i) {
  std::string key(64, '0');
  key[62] = static_cast<char>('a' + i / 10);
  key[63] = static_cast<char>('0' + i % 10);
  return key;
}

CacheEntry make_entry(const std::string& key, std::string bytes) {
  CacheEntry entry;
  entry.key = key;
  entry.artifact.bytes = std::move(bytes);
  entry.artifact.target = "cuda:90";
  entry.compile_ms = 10;
  return entry;
}

// A tier whose puts of the keys it is told to hold wait until released:
// where a fill stands while the test looks at what the cache answers.
class GatedStore final : public Store {
 public:
  std::string_view name() const override { return "gated"; }
  Result<std::optional<CacheEntry>> get(std::string_view key) override {
    std::lock_guard lock(mutex_);
    auto found = entries_.find(std::string(key));
    if (found == entries_.end()) return std::optional<CacheEntry>();
    return std::optional<CacheEntry>(found->second);
  }
  Status put(const CacheEntry& entry) override {
    std::unique_lock lock(mutex_);
    if (held_.count(entry.key)) {
      ++waiting_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !held_.count(entry.key); });
      --waiting_;
    }
    if (refuse_) return make_error(ErrorCode::unavailable, "the disk is full");
    entries_[entry.key] = entry;
    ++puts_;
    return Ok{};
  }
  Status remove(std::string_view key) override {
    std::lock_guard lock(mutex_);
    entries_.erase(std::string(key));
    return Ok{};
  }
  Result<bool> contains(std::string_view key) override {
    std::lock_guard lock(mutex_);
    return entries_.count(std::string(key)) > 0;
  }
  StoreStats stats() const override {
    std::lock_guard lock(mutex_);
    StoreStats out;
    out.puts = puts_;
    return out;
  }
  Result<std::vector<StoredKey>> list() override { return std::vector<StoredKey>(); }

  void hold(const std::string& key) {
    std::lock_guard lock(mutex_);
    held_.insert(key);
  }
  void release_all() {
    {
      std::lock_guard lock(mutex_);
      held_.clear();
    }
    changed_.notify_all();
  }
  void refuse_puts() {
    std::lock_guard lock(mutex_);
    refuse_ = true;
  }
  // Whether a put is blocked in this store now.
  bool put_waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_ > 0;
  }
  uint64_t puts() const { return stats().puts; }
  std::optional<std::string> bytes_of(const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto found = entries_.find(key);
    if (found == entries_.end()) return std::nullopt;
    return found->second.artifact.bytes;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, CacheEntry> entries_;
  std::set<std::string> held_;
  int waiting_ = 0;
  uint64_t puts_ = 0;
  bool refuse_ = false;
};

// A remote tier holding entries already (the fleet compiled them).
std::shared_ptr<MemoryStore> remote_with(const std::vector<CacheEntry>& entries) {
  auto remote = std::make_shared<MemoryStore>(MemoryStore::Options{});
  for (const CacheEntry& entry : entries) EXPECT_TRUE(remote->put(entry).ok());
  return remote;
}

const TierStats& tier_stats(const TieredCacheStats& stats, CacheTier tier) {
  for (const TierStats& t : stats.tiers)
    if (t.tier == tier) return t;
  throw std::runtime_error("tier not configured");
}

// get() on another thread, so that a get that waits for its fill fails the
// test (after the fill is let go) instead of hanging it.
std::optional<CacheHit> get_unless_stuck(TieredCache& cache, const std::string& key, GatedStore& gate) {
  auto answer = std::async(std::launch::async, [&] { return cache.get(key); });
  if (answer.wait_for(k_deadlock_guard) != std::future_status::ready) {
    gate.release_all();
    ADD_FAILURE() << "get() waited for the fill of the tier above";
  }
  return answer.get();
}

TieredCache::Options fill_behind(uint64_t max_bytes = 64ull << 20) {
  return TieredCache::Options{.fill_behind = true, .max_fill_bytes = max_bytes};
}

TEST(WriteBehindQueue, RunsWritesInOrderAndFlushWaitsForThem) {
  std::vector<int> ran;
  WriteBehindQueue queue(1 << 20);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.push(1, [&ran, i] { ran.push_back(i); }));
  queue.flush();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(queue.length(), 0u);
}

TEST(WriteBehindQueue, AWritePastTheBoundIsDroppedUntilTheRunningOneIsDone) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> started{false};
  WriteBehindQueue queue(100);
  ASSERT_TRUE(queue.push(60, [&] {
    started = true;
    released.wait();
  }));
  ASSERT_TRUE(test::eventually([&] { return started.load(); }));
  // The running write still holds its 60 bytes.
  EXPECT_FALSE(queue.push(41, [] {}));
  EXPECT_TRUE(queue.push(40, [] {}));
  EXPECT_EQ(queue.length(), 1u);
  release.set_value();
  queue.flush();
  EXPECT_TRUE(queue.push(100, [] {}));
  EXPECT_FALSE(queue.push(101, [] {})) << "larger than the whole bound: never queued";
}

TEST(WriteBehindQueue, StoppingRunsWhatWasQueued) {
  std::atomic<int> ran{0};
  {
    WriteBehindQueue queue(1 << 20);
    for (int i = 0; i < 50; ++i)
      ASSERT_TRUE(queue.push(1, [&ran] {
        std::this_thread::sleep_for(1ms);
        ++ran;
      }));
  }
  EXPECT_EQ(ran.load(), 50);
}

TEST(TieredCacheFillBehind, ARedisHitIsAnsweredWhileItsDiskFillIsBlocked) {
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  auto disk = std::make_shared<GatedStore>();
  const CacheEntry entry = make_entry(key_for(1), "from the fleet");
  TieredCache cache({memory, disk, remote_with({entry})}, fill_behind());
  disk->hold(entry.key);

  std::optional<CacheHit> hit = get_unless_stuck(cache, entry.key, *disk);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tier, CacheTier::redis);
  EXPECT_EQ(hit->entry->artifact.bytes, "from the fleet");
  // The fill is under way, and blocked: the answer did not wait for it.
  ASSERT_TRUE(test::eventually([&] { return disk->put_waiting(); }));
  EXPECT_EQ(disk->puts(), 0u);

  // The next request for the key, right after, is served, from memory.
  std::optional<CacheHit> again = cache.get(entry.key);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->tier, CacheTier::memory);

  disk->release_all();
  cache.flush_fills();
  EXPECT_EQ(disk->puts(), 1u);
  EXPECT_EQ(disk->bytes_of(entry.key), "from the fleet");
  EXPECT_EQ(tier_stats(cache.stats(), CacheTier::disk).failures, 0u);
}

TEST(TieredCacheFillBehind, WithoutMemoryTheNextRequestIsServedByTheRemoteTierUntilTheFillLands) {
  auto disk = std::make_shared<GatedStore>();
  const CacheEntry entry = make_entry(key_for(2), "remote");
  TieredCache cache({nullptr, disk, remote_with({entry})}, fill_behind());
  disk->hold(entry.key);

  ASSERT_EQ(get_unless_stuck(cache, entry.key, *disk)->tier, CacheTier::redis);
  ASSERT_TRUE(test::eventually([&] { return disk->put_waiting(); }));
  std::optional<CacheHit> again = get_unless_stuck(cache, entry.key, *disk);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->tier, CacheTier::redis);
  EXPECT_EQ(again->entry->artifact.bytes, "remote");

  disk->release_all();
  cache.flush_fills();
  EXPECT_EQ(disk->puts(), 1u) << "the second fill found the first one's entry and wrote nothing";
  EXPECT_EQ(cache.get(entry.key)->tier, CacheTier::disk);
}

TEST(TieredCacheFillBehind, AReapiHitFillsDiskAndRedisAfterTheAnswer) {
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  auto disk = std::make_shared<GatedStore>();
  auto redis = std::make_shared<GatedStore>();
  const CacheEntry entry = make_entry(key_for(3), "from the REAPI store");
  TieredCache cache({memory, disk, redis, remote_with({entry})}, fill_behind());
  disk->hold(entry.key);
  redis->hold(entry.key);

  std::optional<CacheHit> hit = get_unless_stuck(cache, entry.key, *disk);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tier, CacheTier::reapi);
  ASSERT_TRUE(test::eventually([&] { return disk->put_waiting(); }));
  EXPECT_EQ(redis->puts(), 0u);

  disk->release_all();
  ASSERT_TRUE(test::eventually([&] { return redis->put_waiting(); }));
  redis->release_all();
  cache.flush_fills();
  EXPECT_EQ(disk->bytes_of(entry.key), "from the REAPI store");
  EXPECT_EQ(redis->bytes_of(entry.key), "from the REAPI store");
}

TEST(TieredCacheFillBehind, FillsPastAFullQueueAreDroppedAndCountedPerTier) {
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  auto disk = std::make_shared<GatedStore>();
  auto redis = std::make_shared<GatedStore>();
  const CacheEntry first = make_entry(key_for(4), "first");
  const CacheEntry second = make_entry(key_for(5), "other");
  ASSERT_EQ(MemoryStore::footprint(first), MemoryStore::footprint(second));
  // Room for one fill: the first, blocked, keeps it.
  TieredCache cache({memory, disk, redis, remote_with({first, second})}, fill_behind(MemoryStore::footprint(first)));
  disk->hold(first.key);

  ASSERT_EQ(get_unless_stuck(cache, first.key, *disk)->tier, CacheTier::reapi);
  std::optional<CacheHit> dropped = get_unless_stuck(cache, second.key, *disk);
  ASSERT_TRUE(dropped.has_value()) << "a dropped fill still answers";
  EXPECT_EQ(dropped->tier, CacheTier::reapi);
  TieredCacheStats stats = cache.stats();
  EXPECT_EQ(tier_stats(stats, CacheTier::disk).fills_dropped, 1u);
  EXPECT_EQ(tier_stats(stats, CacheTier::redis).fills_dropped, 1u);
  EXPECT_EQ(tier_stats(stats, CacheTier::memory).fills_dropped, 0u);
  EXPECT_EQ(tier_stats(stats, CacheTier::reapi).fills_dropped, 0u);

  disk->release_all();
  cache.flush_fills();
  EXPECT_EQ(disk->bytes_of(first.key), "first");
  EXPECT_EQ(disk->bytes_of(second.key), std::nullopt);
  EXPECT_EQ(redis->bytes_of(second.key), std::nullopt);
  // Memory had its copy at once: the dropped fill costs no second remote read.
  EXPECT_EQ(cache.get(second.key)->tier, CacheTier::memory);
}

TEST(TieredCacheFillBehind, AFailedFillIsCountedAndTheAnswerStands) {
  auto disk = std::make_shared<GatedStore>();
  disk->refuse_puts();
  const CacheEntry entry = make_entry(key_for(6), "kept remote");
  TieredCache cache({std::make_shared<MemoryStore>(MemoryStore::Options{}), disk, remote_with({entry})}, fill_behind());
  std::optional<CacheHit> hit = cache.get(entry.key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->entry->artifact.bytes, "kept remote");
  cache.flush_fills();
  EXPECT_EQ(tier_stats(cache.stats(), CacheTier::disk).failures, 1u);
  EXPECT_EQ(cache.get(entry.key)->tier, CacheTier::memory);
}

// The fill is a copy of what the remote tier held when it was read; a put
// of other bytes under the key (a replaced blob) that reached the disk tier
// before the fill ran stays there.
TEST(TieredCacheFillBehind, AFillDoesNotUndoAPutThatLandedBeforeIt) {
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  auto disk = std::make_shared<GatedStore>();
  const CacheEntry blocker = make_entry(key_for(7), "first in the queue");
  const CacheEntry old_bytes = make_entry(key_for(8), "old bytes");
  TieredCache cache({memory, disk, remote_with({blocker, old_bytes})}, fill_behind());
  disk->hold(blocker.key);
  ASSERT_TRUE(get_unless_stuck(cache, blocker.key, *disk).has_value());
  ASSERT_EQ(get_unless_stuck(cache, old_bytes.key, *disk)->entry->artifact.bytes, "old bytes");  // fill queued
  cache.put(make_entry(old_bytes.key, "new bytes"));

  disk->release_all();
  cache.flush_fills();
  EXPECT_EQ(disk->bytes_of(old_bytes.key), "new bytes");
}

TEST(TieredCacheFillBehind, DestroyingTheCacheMakesTheQueuedFills) {
  auto disk = std::make_shared<GatedStore>();
  std::vector<CacheEntry> entries;
  for (int i = 10; i < 20; ++i) entries.push_back(make_entry(key_for(i), "entry " + std::to_string(i)));
  auto remote = remote_with(entries);
  std::thread release;
  {
    TieredCache cache({std::make_shared<MemoryStore>(MemoryStore::Options{}), disk, remote}, fill_behind());
    disk->hold(entries.front().key);
    for (const CacheEntry& entry : entries) ASSERT_TRUE(get_unless_stuck(cache, entry.key, *disk).has_value());
    ASSERT_TRUE(test::eventually([&] { return disk->put_waiting(); }));
    release = std::thread([disk] {
      std::this_thread::sleep_for(20ms);
      disk->release_all();
    });
    // ~TieredCache waits for the fills still queued: the blocked one and those behind it.
  }
  release.join();
  for (const CacheEntry& entry : entries) EXPECT_EQ(disk->bytes_of(entry.key), entry.artifact.bytes);
}

TEST(TieredCacheFillBehind, WithoutFillBehindTheFillIsMadeBeforeTheAnswer) {
  auto disk = std::make_shared<GatedStore>();
  const CacheEntry entry = make_entry(key_for(9), "at once");
  TieredCache cache({std::make_shared<MemoryStore>(MemoryStore::Options{}), disk, remote_with({entry})});
  ASSERT_TRUE(cache.get(entry.key).has_value());
  EXPECT_EQ(disk->bytes_of(entry.key), "at once");
}

}  // namespace
}  // namespace kjit
