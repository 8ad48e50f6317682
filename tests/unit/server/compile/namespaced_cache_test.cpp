// The one seam between callers and the daemon's cache: a view bound to a
// namespace sees, changes and collects only that namespace's entries.
#include "server/compile/namespaced_cache.h"

#include <gtest/gtest.h>

#include "pipeline/cache_key.h"
#include "server/compile/blob_store.h"
#include "server/compile/daemon_cache.h"
#include "unit/server/serving_test_support.h"

namespace kjit {
namespace {

CacheEntry entry_of(const std::string& key, std::string bytes) {
  CacheEntry entry;
  entry.key = key;
  entry.created_unix = 1;
  entry.artifact.bytes = std::move(bytes);
  return entry;
}

std::vector<std::string> keys_of(const Result<std::vector<StoredKey>>& listed) {
  std::vector<std::string> keys;
  if (listed)
    for (const StoredKey& k : *listed) keys.push_back(k.key);
  return keys;
}

TEST(NamespacedKeys, KeepNamespacesApartAndSplitBack) {
  const std::string key = sha256_hex("some compile");
  EXPECT_EQ(namespaced_key(key, ""), key);  // the default namespace keeps the bare key
  const std::string alpha = namespaced_key(key, "alpha");
  const std::string team = namespaced_key(key, "team-a");
  EXPECT_NE(alpha, key);
  EXPECT_NE(alpha, team);
  EXPECT_EQ(split_namespaced_key(alpha).ns, "alpha");
  EXPECT_EQ(split_namespaced_key(alpha).key, key);
  EXPECT_EQ(split_namespaced_key(team).ns, "team-a");  // a hyphen in the namespace is fine
  EXPECT_EQ(split_namespaced_key(team).key, key);
  EXPECT_EQ(split_namespaced_key(key).ns, "");
  const std::string blob = key + "-blob";
  EXPECT_EQ(split_namespaced_key(blob).ns, "");
  EXPECT_EQ(split_namespaced_key(namespaced_key(blob, "beta")).key, blob);
  // Every namespaced key is still a valid key for the disk tier: at most 128
  // characters of [0-9a-zA-Z_-].
  EXPECT_LE(namespaced_key(blob, std::string(32, 'z')).size(), 128u);
}

class NamespacedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = DaemonCache::open(test::cache_config(dir_.path()));
    ASSERT_NE(cache_, nullptr);
    ASSERT_TRUE(cache_->has_disk());
  }
  test::TempDir dir_;
  std::shared_ptr<DaemonCache> cache_;
  const std::string key_ = sha256_hex("one kernel");
};

TEST_F(NamespacedCacheTest, AViewSeesOnlyItsOwnNamespace) {
  NamespacedCache alpha = cache_->compiles_in("alpha");
  NamespacedCache beta = cache_->compiles_in("beta");
  NamespacedCache shared = cache_->compiles_in("");
  alpha.put(entry_of(key_, "alpha's bytes"));

  ASSERT_TRUE(alpha.get(key_));
  EXPECT_EQ(alpha.get(key_)->entry->artifact.bytes, "alpha's bytes");
  EXPECT_EQ(alpha.get(key_)->entry->key, alpha.stored_key(key_));
  EXPECT_FALSE(beta.get(key_)) << "another namespace found alpha's entry under the same key";
  EXPECT_FALSE(shared.get(key_)) << "the default namespace found alpha's entry";
  EXPECT_FALSE(beta.get_from_memory(key_));

  // Beta's own entry under the same key replaces nothing of alpha's.
  beta.put(entry_of(key_, "beta's bytes"));
  EXPECT_EQ(alpha.get(key_)->entry->artifact.bytes, "alpha's bytes");
  EXPECT_EQ(beta.get(key_)->entry->artifact.bytes, "beta's bytes");

  // Listings hold each namespace's own entries, under the keys it knows.
  EXPECT_EQ(keys_of(alpha.list()), std::vector<std::string>{key_});
  EXPECT_EQ(keys_of(beta.list()), std::vector<std::string>{key_});
  EXPECT_TRUE(keys_of(shared.list()).empty());

  // Removing and collecting act on the caller's namespace alone.
  beta.remove(key_);
  EXPECT_FALSE(beta.get(key_));
  ASSERT_TRUE(alpha.get(key_)) << "beta's remove reached alpha's entry";
  beta.put(entry_of(key_, "beta again"));
  Result<DiskStore::GcReport> collected = beta.gc(0);
  ASSERT_TRUE(collected) << collected.error().message;
  EXPECT_EQ(collected->removed_entries, 1u);
  EXPECT_EQ(keys_of(alpha.list()), std::vector<std::string>{key_}) << "beta's gc collected alpha's entry";
}

TEST_F(NamespacedCacheTest, CompilesOnePerKeyAndNamespace) {
  int compiles = 0;
  auto compile = [&]() -> Result<CacheEntry> {
    ++compiles;
    return entry_of("", "compiled #" + std::to_string(compiles));
  };
  NamespacedCache alpha = cache_->compiles_in("alpha");
  NamespacedCache beta = cache_->compiles_in("beta");
  Result<CacheOutcome> first = alpha.get_or_compile(key_, compile);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->entry->key, alpha.stored_key(key_));
  ASSERT_TRUE(alpha.get_or_compile(key_, compile));
  EXPECT_EQ(compiles, 1) << "a namespace's second request compiled again";
  Result<CacheOutcome> other = beta.get_or_compile(key_, compile);
  ASSERT_TRUE(other);
  EXPECT_EQ(compiles, 2) << "another namespace was answered with alpha's compile";
  EXPECT_EQ(other->entry->artifact.bytes, "compiled #2");
}

TEST_F(NamespacedCacheTest, BlobsOfOneNamespaceAreNotAnothers) {
  BlobStore blobs(1 << 20);
  ASSERT_TRUE(blobs.put(cache_->blobs_in("alpha"), "triton", "k", "k.cubin", "alpha's cubin"));
  Result<std::optional<BlobHit>> theirs = blobs.get(cache_->blobs_in("beta"), "triton", "k", "k.cubin");
  ASSERT_TRUE(theirs);
  EXPECT_FALSE(theirs->has_value()) << "beta read alpha's blob";
  ASSERT_TRUE(blobs.put(cache_->blobs_in("beta"), "triton", "k", "k.cubin", "beta's cubin"));
  Result<std::optional<BlobHit>> own = blobs.get(cache_->blobs_in("alpha"), "triton", "k", "k.cubin");
  ASSERT_TRUE(own && own->has_value());
  EXPECT_EQ((*own)->entry->artifact.bytes, "alpha's cubin") << "beta's put replaced alpha's blob";
  // Blob lookups are counted apart from compile lookups.
  EXPECT_EQ(cache_->stats().lookups, 0u);
  // A blob view compiles nothing.
  Result<CacheOutcome> refused =
      cache_->blobs_in("alpha").get_or_compile(key_, [] { return Result<CacheEntry>(CacheEntry{}); });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::internal);
}

}  // namespace
}  // namespace kjit
