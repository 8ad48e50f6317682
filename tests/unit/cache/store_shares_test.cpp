// Shares of a bounded tier (store_shares.h), in the memory and disk tiers:
// an owner past its share evicts its own entries, never another's within
// its share, and a full tier takes from owners without a share first.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cache/disk_store.h"
#include "cache/memory_store.h"
#include "sample_entries.h"
#include "temp_dir.h"

namespace kjit {
namespace {

using test::key_for;
using test::make_entry;

// Keys as the daemon spells a namespace's: "<key>-n-<owner>".
std::string owner_of(std::string_view key) {
  const size_t at = key.find("-n-");
  return at == std::string_view::npos ? std::string() : std::string(key.substr(at + 3));
}

std::string key_of(const std::string& owner, int i) { return key_for(i) + "-n-" + owner; }

CacheEntry entry_of(const std::string& owner, int i) { return make_entry(key_of(owner, i), std::string(1000, 'x')); }

std::shared_ptr<const StoreShares> shares(std::map<std::string, uint64_t, std::less<>> max_bytes) {
  return std::make_shared<const StoreShares>(StoreShares{std::move(max_bytes)});
}

TEST(StoreShares, MemoryOwnerPastItsShareEvictsOnlyItsOwn) {
  const uint64_t one = MemoryStore::footprint(entry_of("a", 0));
  MemoryStore store({.max_bytes = 10 * one + one / 2, .shards = 1, .owner_of = owner_of});
  store.set_shares(shares({{"a", 3 * one + one / 2}, {"b", 4 * one + one / 2}}));
  for (int i = 0; i < 4; ++i) store.insert(std::make_shared<CacheEntry>(entry_of("b", i)));
  for (int i = 0; i < 2; ++i) store.insert(std::make_shared<CacheEntry>(entry_of("c", i)));
  for (int i = 0; i < 30; ++i) {
    store.insert(std::make_shared<CacheEntry>(entry_of("a", i)));
    ASSERT_LE(store.owner_usage()["a"].bytes, 3 * one + one / 2) << "after a's put " << i;
  }
  for (int i = 0; i < 4; ++i) EXPECT_NE(store.peek(key_of("b", i)), nullptr) << "b's entry " << i;
  for (int i = 0; i < 2; ++i) EXPECT_NE(store.peek(key_of("c", i)), nullptr) << "c's entry " << i;
  // a keeps its most recent entries.
  EXPECT_NE(store.peek(key_of("a", 29)), nullptr);
  std::map<std::string, OwnerUsage> usage = store.owner_usage();
  EXPECT_EQ(usage["a"].entries, 3u);
  EXPECT_EQ(usage["a"].evictions, 27u);
  EXPECT_EQ(usage["b"].evictions, 0u);
  EXPECT_EQ(usage["c"].evictions, 0u);

  // The tier full: c (no share) makes room from its own entries, and the
  // owners within their shares keep theirs.
  for (int i = 2; i < 12; ++i) store.insert(std::make_shared<CacheEntry>(entry_of("c", i)));
  usage = store.owner_usage();
  EXPECT_EQ(usage["b"].entries, 4u);
  EXPECT_EQ(usage["a"].entries, 3u);
  EXPECT_EQ(usage["a"].evictions, 27u);
  EXPECT_GT(usage["c"].evictions, 0u);
  EXPECT_LE(store.stats().bytes, 10 * one + one / 2);
}

TEST(StoreShares, MemoryFullOfOwnersWithinSharesTakesFromThePutter) {
  const uint64_t one = MemoryStore::footprint(entry_of("a", 0));
  // Shares summing past the bound: each owner within its share.
  MemoryStore store({.max_bytes = 4 * one + one / 2, .shards = 1, .owner_of = owner_of});
  store.set_shares(shares({{"a", 3 * one + one / 2}, {"b", 3 * one + one / 2}}));
  for (int i = 0; i < 3; ++i) store.insert(std::make_shared<CacheEntry>(entry_of("b", i)));
  for (int i = 0; i < 5; ++i) store.insert(std::make_shared<CacheEntry>(entry_of("a", i)));
  std::map<std::string, OwnerUsage> usage = store.owner_usage();
  EXPECT_EQ(usage["b"].entries, 3u) << "a evicted b, which was within its share";
  EXPECT_EQ(usage["b"].evictions, 0u);
  EXPECT_LE(store.stats().bytes, 4 * one + one / 2);
}

TEST(StoreShares, MemoryWithoutSharesIsOneLru) {
  const uint64_t one = MemoryStore::footprint(entry_of("a", 0));
  MemoryStore store({.max_bytes = 3 * one + one / 2, .shards = 1, .owner_of = owner_of});
  for (int i = 0; i < 3; ++i) store.insert(std::make_shared<CacheEntry>(entry_of("b", i)));
  store.insert(std::make_shared<CacheEntry>(entry_of("a", 0)));
  EXPECT_EQ(store.peek(key_of("b", 0)), nullptr) << "the least recently used entry stayed";
  EXPECT_EQ(store.owner_usage()["b"].evictions, 1u);
}

TEST(StoreShares, DiskOwnerPastItsShareEvictsOnlyItsOwn) {
  test::TempDir dir;
  Result<std::unique_ptr<DiskStore>> opened =
      DiskStore::open({.directory = dir.path(), .sync = false, .owner_of = owner_of});
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  DiskStore& store = **opened;
  ASSERT_TRUE(store.put(entry_of("b", 0)).ok());
  const uint64_t one = store.owner_usage()["b"].bytes;
  ASSERT_GT(one, 0u);
  store.set_shares(shares({{"a", 5 * one}, {"b", 5 * one}}));
  for (int i = 1; i < 4; ++i) ASSERT_TRUE(store.put(entry_of("b", i)).ok());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(store.put(entry_of("a", i)).ok());
    ASSERT_LE(store.owner_usage()["a"].bytes, 5 * one) << "after a's put " << i;
  }
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(store.contains(key_of("b", i)).value()) << "b's entry " << i;
  EXPECT_TRUE(store.contains(key_of("a", 49)).value());
  std::map<std::string, OwnerUsage> usage = store.owner_usage();
  EXPECT_EQ(usage["b"].entries, 4u);
  EXPECT_EQ(usage["b"].evictions, 0u);
  EXPECT_GT(usage["a"].evictions, 40u);
  // What the store counts is what the directory holds.
  uint64_t a_bytes = 0;
  const std::vector<StoredKey> listed = store.list().value();
  for (const StoredKey& k : listed)
    if (owner_of(k.key) == "a") a_bytes += k.bytes;
  EXPECT_EQ(a_bytes, usage["a"].bytes);
}

TEST(StoreShares, DiskFullTakesFromOwnersWithoutAShareFirst) {
  test::TempDir dir;
  Result<std::unique_ptr<DiskStore>> probe = DiskStore::open({.directory = dir.path() + "/probe", .sync = false});
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE((*probe)->put(entry_of("b", 0)).ok());
  const uint64_t one = (*probe)->stats().bytes;
  Result<std::unique_ptr<DiskStore>> opened = DiskStore::open(
      {.directory = dir.path() + "/tier", .max_bytes = 10 * one, .sync = false, .owner_of = owner_of});
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  DiskStore& store = **opened;
  store.set_shares(shares({{"b", 5 * one}}));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store.put(entry_of("b", i)).ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(store.put(entry_of("c", i)).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(store.contains(key_of("b", i)).value()) << "b's entry " << i;
  EXPECT_EQ(store.owner_usage()["b"].evictions, 0u);
  EXPECT_GT(store.owner_usage()["c"].evictions, 0u);
  EXPECT_LE(store.stats().bytes, 10 * one);
}

}  // namespace
}  // namespace kjit
