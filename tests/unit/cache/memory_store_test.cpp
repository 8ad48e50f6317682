// The memory tier: byte bound, LRU order, and hits from many threads. (The
// Store contract is store_contract_test.cpp.)
#include "cache/memory_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sample_entries.h"

namespace kjit {
namespace {

using test::key_for;
using test::make_entry;

bool holds(MemoryStore& store, const std::string& key) {
  return store.peek(key) != nullptr;
}

TEST(MemoryStore, EvictsLeastRecentlyUsedWhenOverItsByteBound) {
  const uint64_t one = MemoryStore::footprint(make_entry(key_for(0), std::string(1000, 'x')));
  MemoryStore store({.max_bytes = 3 * one + one / 2, .shards = 1});
  for (int i : {1, 2, 3}) store.insert(std::make_shared<CacheEntry>(make_entry(key_for(i), std::string(1000, 'x'))));
  ASSERT_NE(store.find(key_for(1)), nullptr);  // 1 is now the most recently used; 2 the least
  store.insert(std::make_shared<CacheEntry>(make_entry(key_for(4), std::string(1000, 'x'))));
  EXPECT_FALSE(holds(store, key_for(2)));
  EXPECT_TRUE(holds(store, key_for(1)));
  EXPECT_TRUE(holds(store, key_for(3)));
  EXPECT_TRUE(holds(store, key_for(4)));
  StoreStats stats = store.stats();
  EXPECT_EQ(stats.evictions, 1u);
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_LE(stats.bytes, 3 * one + one / 2);
}

TEST(MemoryStore, StaysWithinItsBoundUnderManyPuts) {
  const uint64_t max_bytes = 200'000;
  MemoryStore store({.max_bytes = max_bytes, .shards = 16});
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(store.put(make_entry(key_for(i), std::string(100 + i % 3000, 'p'))).ok());
    ASSERT_LE(store.stats().bytes, max_bytes);
  }
  StoreStats stats = store.stats();
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_GT(stats.entries, 0u);
  Result<std::vector<StoredKey>> listed = store.list();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), stats.entries);
}

TEST(MemoryStore, EntryLargerThanItsShardIsNotKept) {
  MemoryStore store({.max_bytes = 64 * 1024, .shards = 4});
  ASSERT_TRUE(store.put(make_entry(key_for(1), std::string(32 * 1024, 'x'))).ok());
  EXPECT_FALSE(holds(store, key_for(1)));
  EXPECT_EQ(store.stats().bytes, 0u);
}

TEST(MemoryStore, SixteenThreadsHitConcurrently) {
  MemoryStore store({.max_bytes = 64ull << 20});
  constexpr int k_keys = 64, k_threads = 16, k_gets = 20'000;
  for (int i = 0; i < k_keys; ++i)
    store.insert(std::make_shared<CacheEntry>(make_entry(key_for(i), key_for(i) + "payload")));
  std::vector<std::string> keys;
  for (int i = 0; i < k_keys; ++i) keys.push_back(key_for(i));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < k_gets; ++n) {
        const std::string& key = keys[(n * 7 + t) % k_keys];
        std::shared_ptr<const CacheEntry> entry = store.find(key);
        if (!entry || entry->artifact.bytes != key + "payload") ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  StoreStats stats = store.stats();
  EXPECT_EQ(stats.hits, uint64_t{k_threads} * k_gets);
  EXPECT_EQ(stats.misses, 0u);
}

TEST(MemoryStore, ConcurrentPutsAndGetsKeepTheBound) {
  const uint64_t max_bytes = 1 << 20;
  MemoryStore store({.max_bytes = max_bytes});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < 3000; ++n) {
        const int i = (n * 13 + t) % 500;
        if (n % 3 == 0) {
          store.insert(std::make_shared<CacheEntry>(make_entry(key_for(i), std::string(1000 + i, char('a' + i % 26)))));
        } else if (auto entry = store.find(key_for(i))) {
          if (entry->artifact.bytes != std::string(1000 + i, char('a' + i % 26))) ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(store.stats().bytes, max_bytes);
}

}  // namespace
}  // namespace kjit
