// The tiered cache: which tier answers, fill-up of upper tiers, and a
// failing tier (a fake, or a stopped redis-server) skipped and counted.
#include "cache/tiered_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <utility>

#include "cache/disk_store.h"
#include "cache/redis_store.h"
#include "redis_server.h"
#include "sample_entries.h"
#include "support/eventually.h"
#include "temp_dir.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;
using test::make_entry;

class FailingStore final : public Store {
 public:
  std::string_view name() const override { return "failing"; }
  Result<std::optional<CacheEntry>> get(std::string_view) override { return fail(); }
  Status put(const CacheEntry&) override { return fail(); }
  Status remove(std::string_view) override { return fail(); }
  Result<bool> contains(std::string_view) override { return fail(); }
  StoreStats stats() const override { return {}; }
  Result<std::vector<StoredKey>> list() override { return fail(); }

 private:
  static Error fail() { return make_error(ErrorCode::unavailable, "always down"); }
};

std::shared_ptr<DiskStore> open_disk(const std::string& dir) {
  return std::shared_ptr<DiskStore>(DiskStore::open({.directory = dir}).value().release());
}

const TierStats& tier_stats(const TieredCacheStats& stats, CacheTier tier) {
  for (const TierStats& t : stats.tiers)
    if (t.tier == tier) return t;
  throw std::runtime_error("tier not configured");
}

TEST(TieredCache, DiskHitFillsMemoryAndThenMemoryAnswers) {
  test::TempDir dir;
  auto disk = open_disk(dir.path());
  ASSERT_TRUE(disk->put(make_entry(key_for(1), "from disk")).ok());
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  TieredCache cache({memory, disk, nullptr});

  std::optional<CacheHit> first = cache.get(key_for(1));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->tier, CacheTier::disk);
  EXPECT_EQ(first->entry->artifact.bytes, "from disk");
  std::optional<CacheHit> second = cache.get(key_for(1));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->tier, CacheTier::memory);
  EXPECT_EQ(second->entry, first->entry);  // shared, not copied
  EXPECT_FALSE(cache.get(key_for(2)).has_value());

  TieredCacheStats stats = cache.stats();
  EXPECT_EQ(stats.lookups, 3u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(tier_stats(stats, CacheTier::disk).answered, 1u);
  EXPECT_EQ(tier_stats(stats, CacheTier::memory).answered, 1u);
  EXPECT_DOUBLE_EQ(stats.compile_ms_saved, 2 * 123.5);
}

// A lower tier that answers with what it held when asked, after a put of
// other bytes under that key landed meanwhile (a replaced blob): `during_get`
// runs between the read and the answer.
class ReadThenRaceStore final : public Store {
 public:
  ReadThenRaceStore(std::shared_ptr<Store> inner, std::function<void()> during_get)
      : inner_(std::move(inner)), during_get_(std::move(during_get)) {}
  std::string_view name() const override { return inner_->name(); }
  Result<std::optional<CacheEntry>> get(std::string_view key) override {
    Result<std::optional<CacheEntry>> read = inner_->get(key);
    if (during_get_) std::exchange(during_get_, nullptr)();
    return read;
  }
  Status put(const CacheEntry& entry) override { return inner_->put(entry); }
  Status remove(std::string_view key) override { return inner_->remove(key); }
  Result<bool> contains(std::string_view key) override { return inner_->contains(key); }
  StoreStats stats() const override { return inner_->stats(); }
  Result<std::vector<StoredKey>> list() override { return inner_->list(); }

 private:
  std::shared_ptr<Store> inner_;
  std::function<void()> during_get_;
};

// The copy a lower tier's hit makes into memory never takes the place of
// what a put stored there meanwhile: the old bytes would be served from
// memory long after the put, while every lower tier holds the new ones.
TEST(TieredCache, ALowerTiersHitDoesNotUndoAPutThatLandedMeanwhile) {
  test::TempDir dir;
  auto disk = open_disk(dir.path());
  ASSERT_TRUE(disk->put(make_entry(key_for(1), "old bytes")).ok());
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  TieredCache* tiers = nullptr;
  auto racing = std::make_shared<ReadThenRaceStore>(disk, [&] { tiers->put(make_entry(key_for(1), "new bytes")); });
  TieredCache cache({memory, racing, nullptr});
  tiers = &cache;

  std::optional<CacheHit> racer = cache.get(key_for(1));
  ASSERT_TRUE(racer.has_value());
  EXPECT_EQ(racer->entry->artifact.bytes, "old bytes");  // read before the put: the old bytes, whole
  std::optional<CacheHit> next = cache.get(key_for(1));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->tier, CacheTier::memory);
  EXPECT_EQ(next->entry->artifact.bytes, "new bytes");
  Result<std::optional<CacheEntry>> on_disk = disk->get(key_for(1));
  ASSERT_TRUE(on_disk && on_disk->has_value());
  EXPECT_EQ((*on_disk)->artifact.bytes, "new bytes");
}

TEST(TieredCache, PutWritesEveryTier) {
  test::TempDir dir;
  auto disk = open_disk(dir.path());
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  TieredCache cache({memory, disk, nullptr});
  std::shared_ptr<const CacheEntry> stored = cache.put(make_entry(key_for(1), "both"));
  EXPECT_EQ(memory->peek(key_for(1)), stored);
  EXPECT_TRUE(disk->get(key_for(1)).value().has_value());
  cache.remove(key_for(1));
  EXPECT_EQ(memory->peek(key_for(1)), nullptr);
  EXPECT_FALSE(disk->get(key_for(1)).value().has_value());
}

TEST(TieredCache, FailingTierIsSkippedAndCounted) {
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  TieredCache cache({memory, std::make_shared<FailingStore>(), nullptr});
  cache.put(make_entry(key_for(1), "kept in memory"));
  std::optional<CacheHit> hit = cache.get(key_for(1));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tier, CacheTier::memory);
  EXPECT_FALSE(cache.get(key_for(2)).has_value());
  TieredCacheStats stats = cache.stats();
  EXPECT_EQ(tier_stats(stats, CacheTier::disk).failures, 2u);  // the put and the missed get
  EXPECT_EQ(stats.misses, 1u);
}

TEST(TieredCache, NoTiersIsAlwaysAMiss) {
  TieredCache cache({nullptr, nullptr, nullptr});
  cache.put(make_entry(key_for(1), "nowhere"));
  EXPECT_FALSE(cache.get(key_for(1)).has_value());
  EXPECT_TRUE(cache.stats().tiers.empty());
}

class TieredCacheRedisTest : public test::RedisServerTest {
 protected:
  // A backoff long enough that no probe comes while a test runs through an
  // outage, however slowly; a test waiting for it to pass polls.
  std::shared_ptr<RedisStore> redis() {
    RedisConnection::Options o = server_.connection_options();
    o.breaker = {.failures_to_open = 2, .backoff_initial = 5s, .backoff_max = 5s};
    return std::make_shared<RedisStore>(std::make_shared<RedisConnection>(o), RedisStore::Options{});
  }
};

TEST_F(TieredCacheRedisTest, RedisHitFillsDiskAndMemory) {
  test::TempDir dir_a, dir_b;
  auto redis = this->redis();
  // "Daemon A" compiled it; "daemon B" has its own disk and memory.
  TieredCache a({std::make_shared<MemoryStore>(MemoryStore::Options{}), open_disk(dir_a.path()), redis});
  a.put(make_entry(key_for(1), "fleet"));
  auto disk_b = open_disk(dir_b.path());
  TieredCache b({std::make_shared<MemoryStore>(MemoryStore::Options{}), disk_b, this->redis()});
  std::optional<CacheHit> hit = b.get(key_for(1));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tier, CacheTier::redis);
  EXPECT_TRUE(disk_b->get(key_for(1)).value().has_value());
  EXPECT_EQ(b.get(key_for(1))->tier, CacheTier::memory);
}

TEST_F(TieredCacheRedisTest, RedisOutageIsSkippedAndRedisIsUsedAgainWhenBack) {
  test::TempDir dir;
  auto redis = this->redis();
  auto memory = std::make_shared<MemoryStore>(MemoryStore::Options{});
  auto disk = open_disk(dir.path());
  TieredCache cache({memory, disk, redis});
  cache.put(make_entry(key_for(1), "before"));

  server_.stop();
  // Requests keep succeeding from the other tiers.
  for (int i = 2; i < 12; ++i) {
    cache.put(make_entry(key_for(i), "during"));
    std::optional<CacheHit> hit = cache.get(key_for(i));
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->tier, CacheTier::memory);
  }
  EXPECT_FALSE(cache.get(key_for(100)).has_value());  // a miss asks every tier, redis fails fast
  EXPECT_TRUE(redis->breaker_open());
  TieredCacheStats down = cache.stats();
  EXPECT_GT(tier_stats(down, CacheTier::redis).failures, 0u);
  EXPECT_EQ(tier_stats(down, CacheTier::redis).store.errors, 2u);  // the rest were skipped
  EXPECT_GT(tier_stats(down, CacheTier::redis).store.skipped, 0u);
  EXPECT_EQ(tier_stats(down, CacheTier::disk).failures, 0u);

  ASSERT_TRUE(server_.start());
  // Once the backoff has passed, a put is the probe, and it closes the breaker.
  EXPECT_TRUE(test::eventually([&] {
    cache.put(make_entry(key_for(50), "after"));
    return !redis->breaker_open();
  }));
  // Seen by a cache that only has the Redis tier.
  TieredCache redis_only({nullptr, nullptr, this->redis()});
  std::optional<CacheHit> hit = redis_only.get(key_for(50));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tier, CacheTier::redis);
  EXPECT_EQ(hit->entry->artifact.bytes, "after");
}

}  // namespace
}  // namespace kjit
