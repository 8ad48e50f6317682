// The Store contract, run against every tier (memory, disk, Redis): a put
// is read back whole, a miss and a removal are not failures, a replaced
// entry leaves only the new one, contains() and list() see what is stored,
// and many threads share one store. Each tier's own file tests what only it
// does (eviction, files, expiry, the breaker).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <thread>
#include <vector>

#include "cache/disk_store.h"
#include "cache/memory_store.h"
#include "cache/redis_store.h"
#include "redis_server.h"
#include "sample_entries.h"
#include "temp_dir.h"
#include "typed_setup.h"

namespace kjit {
namespace {

using test::key_for;
using test::make_entry;

// Each tier: how to open it, and what it charges an entry in stats().bytes
// and in list() (0 in stats where the tier does not track its contents).
struct MemoryTier {
  static constexpr const char* k_name = "Memory";
  static constexpr bool k_uses_redis = false;
  static constexpr bool k_tracks_contents = true;
  bool start() { return true; }
  std::shared_ptr<Store> open() { return std::make_shared<MemoryStore>(MemoryStore::Options{}); }
  static uint64_t stored_bytes(const CacheEntry& entry) { return MemoryStore::footprint(entry); }
};

struct DiskTier {
  static constexpr const char* k_name = "Disk";
  static constexpr bool k_uses_redis = false;
  static constexpr bool k_tracks_contents = true;
  bool start() { return true; }
  std::shared_ptr<Store> open() { return DiskStore::open({.directory = dir.path(), .sync = false}).value(); }
  static uint64_t stored_bytes(const CacheEntry& entry) { return encode_entry(entry).size(); }
  test::TempDir dir;
};

struct RedisTier {
  static constexpr const char* k_name = "Redis";
  static constexpr bool k_uses_redis = true;
  static constexpr bool k_tracks_contents = false;
  bool start() { return server.start(); }
  std::shared_ptr<Store> open() {
    return std::make_shared<RedisStore>(std::make_shared<RedisConnection>(server.connection_options()),
                                        RedisStore::Options{.ttl = std::chrono::seconds(60)});
  }
  static uint64_t stored_bytes(const CacheEntry& entry) { return encode_entry(entry).size(); }
  test::RedisServer server;
};

template <typename Tier>
class StoreContract : public test::SetupTest<Tier> {
 protected:
  // The tier's store, opened on first use.
  Store& store() {
    if (!store_) store_ = this->setup_.open();
    return *store_;
  }

  // stats().bytes and entries after storing `entries`, where the tier tracks them.
  void expect_contents(const std::vector<CacheEntry>& entries) {
    const StoreStats stats = store().stats();
    uint64_t bytes = 0;
    for (const CacheEntry& e : entries) bytes += Tier::stored_bytes(e);
    EXPECT_EQ(stats.entries, Tier::k_tracks_contents ? entries.size() : 0u);
    EXPECT_EQ(stats.bytes, Tier::k_tracks_contents ? bytes : 0u);
  }

  std::shared_ptr<Store> store_;
};

using Tiers = ::testing::Types<MemoryTier, DiskTier, RedisTier>;
TYPED_TEST_SUITE(StoreContract, Tiers, test::SetupName);

TYPED_TEST(StoreContract, PutThenGetReturnsTheEntry) {
  Store& store = this->store();
  CacheEntry entry = make_entry(key_for(1), std::string(256 * 1024, 'r'));
  ASSERT_TRUE(store.put(entry).ok());
  Result<std::optional<CacheEntry>> got = store.get(entry.key);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  test::expect_same_entry(**got, entry);
  Result<std::optional<CacheEntry>> missing = store.get(key_for(2));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  StoreStats stats = store.stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.puts, 1u);
  EXPECT_EQ(stats.errors, 0u);
  this->expect_contents({entry});
}

TYPED_TEST(StoreContract, RemovedEntryMissesAndRemovingAMissingKeySucceeds) {
  Store& store = this->store();
  CacheEntry entry = make_entry(key_for(1), "x");
  ASSERT_TRUE(store.put(entry).ok());
  ASSERT_TRUE(store.remove(entry.key).ok());
  EXPECT_FALSE(store.get(entry.key).value().has_value());
  EXPECT_TRUE(store.remove(entry.key).ok());
  EXPECT_TRUE(store.remove(key_for(2)).ok());
  this->expect_contents({});
}

TYPED_TEST(StoreContract, ReplacingAnEntryKeepsAndChargesOnlyTheNewOne) {
  Store& store = this->store();
  ASSERT_TRUE(store.put(make_entry(key_for(1), std::string(5000, 'a'))).ok());
  CacheEntry smaller = make_entry(key_for(1), "b");
  ASSERT_TRUE(store.put(smaller).ok());
  EXPECT_EQ(store.get(key_for(1)).value()->artifact.bytes, "b");
  this->expect_contents({smaller});
}

TYPED_TEST(StoreContract, ContainsSeesStoredEntriesWithoutCountingThem) {
  Store& store = this->store();
  ASSERT_TRUE(store.put(make_entry(key_for(1), "p")).ok());
  EXPECT_TRUE(store.contains(key_for(1)).value());
  EXPECT_FALSE(store.contains(key_for(2)).value());
  ASSERT_TRUE(store.remove(key_for(1)).ok());
  EXPECT_FALSE(store.contains(key_for(1)).value());
  StoreStats stats = store.stats();
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(stats.misses, 0u);
}

TYPED_TEST(StoreContract, ListShowsKeysSizesAndLastUse) {
  Store& store = this->store();
  std::vector<CacheEntry> entries;
  for (int i = 0; i < 5; ++i) {
    entries.push_back(make_entry(key_for(i), "listed " + std::to_string(i)));
    ASSERT_TRUE(store.put(entries.back()).ok());
  }
  Result<std::vector<StoredKey>> listed = store.list();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), entries.size());
  for (const StoredKey& k : *listed) {
    auto entry = std::find_if(entries.begin(), entries.end(), [&](const CacheEntry& e) { return e.key == k.key; });
    ASSERT_NE(entry, entries.end()) << k.key;
    EXPECT_EQ(k.bytes, TypeParam::stored_bytes(*entry));
    EXPECT_NEAR(double(k.last_access_unix), double(::time(nullptr)), 5);
  }
}

TYPED_TEST(StoreContract, ManyThreadsShareTheStore) {
  Store& store = this->store();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < 50; ++n) {
        const std::string key = key_for(t * 1000 + n);
        if (!store.put(make_entry(key, key)).ok()) ++wrong;
        Result<std::optional<CacheEntry>> got = store.get(key);
        if (!got.ok() || !got->has_value() || (*got)->artifact.bytes != key) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(store.stats().errors, 0u);
}

}  // namespace
}  // namespace kjit
