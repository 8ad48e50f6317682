// The one seam between callers and the daemon's cache: a view bound to a
// namespace sees, changes and collects only that namespace's entries.
#include "server/compile/namespaced_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

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
  // Every namespaced key is still a valid key for the disk tier: at most 160
  // characters of [0-9a-zA-Z_-], tagged or not.
  NamesKey names{};
  names.fill(7);
  EXPECT_LE(namespaced_key(blob, std::string(32, 'z'), &names).size(), 160u);
}

TEST(NamespacedKeys, ATagNeedsTheNamesKeyAndSplitsBackToTheBareKey) {
  const std::string blob = sha256_hex("a blob") + "-blob";
  NamesKey mine{}, theirs{};
  mine.fill(1);
  theirs.fill(2);
  const std::string tagged = namespaced_key(blob, "U1000", &mine);
  EXPECT_NE(tagged, namespaced_key(blob, "U1000"));
  EXPECT_NE(tagged, namespaced_key(blob, "U1000", &theirs));  // another key names another file
  EXPECT_EQ(tagged, namespaced_key(blob, "U1000", &mine));    // and the same key the same one
  EXPECT_EQ(tagged, blob + "-c" + blob_file_tag(mine, blob) + "-n-U1000");
  EXPECT_EQ(blob_file_tag(mine, blob).size(), 32u);
  const NamespacedKey split = split_namespaced_key(tagged);
  EXPECT_EQ(split.ns, "U1000");
  EXPECT_EQ(split.key, blob);
  EXPECT_TRUE(split.tagged);
  EXPECT_FALSE(split_namespaced_key(namespaced_key(blob, "U1000")).tagged);
  EXPECT_FALSE(split_namespaced_key(blob).tagged);
  // Tagged in the default namespace too (no such view today, but the spelling holds).
  EXPECT_EQ(split_namespaced_key(namespaced_key(blob, "", &mine)).key, blob);
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

// Modes on disk: a user's blobs are readable by whoever can name them (their
// names take the namespace's names key), the shared compile entries by all,
// the operator's blobs and tenants' entries by kjitd's user alone; the
// directories can be passed, not listed.
TEST_F(NamespacedCacheTest, ModesLetOthersReadOnlyWhatTheyCanNameAndMayHave) {
  const mode_t old_umask = ::umask(022);
  BlobStore blobs(1 << 20);
  Result<BlobPutOutcome> users = blobs.put(cache_->local_user_blobs_in("U1000"), "triton", "k", "k.cubin", "user's");
  Result<BlobPutOutcome> operators = blobs.put(cache_->blobs_in(""), "triton", "k", "k.cubin", "operator's");
  cache_->compiles_in("").put(entry_of(key_, "shared compile"));
  cache_->compiles_in("tenant").put(entry_of(key_, "tenant's compile"));
  ::umask(old_umask);
  ASSERT_TRUE(users && operators);
  ASSERT_EQ(users->cache_key, operators->cache_key);  // one identity, two namespaces

  const std::optional<NamesKey> names = cache_->names_key_for("U1000");
  ASSERT_TRUE(names);
  EXPECT_NE(*names, *cache_->names_key_for("U1001"));
  const std::string root = cache_->disk_layout()->root;
  auto mode_of = [&](const std::string& stored) {
    struct stat st {};
    const std::string path = root + "/" + stored.substr(0, 2) + "/" + stored + ".kjit";
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  EXPECT_EQ(mode_of(namespaced_key(users->cache_key, "U1000", &*names)), 0644);
  EXPECT_EQ(mode_of(users->cache_key), 0600);
  EXPECT_EQ(mode_of(key_), 0644);
  EXPECT_EQ(mode_of(namespaced_key(key_, "tenant")), 0600);
  struct stat st {};
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  ASSERT_EQ(::stat((root + "/" + key_.substr(0, 2)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  // The secret the names derive from is kjitd's user's alone.
  ASSERT_EQ(::stat((dir_.path() + "/blob-names.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // The user's view reads its blob back and lists it under the key it knows.
  Result<std::optional<BlobHit>> back = blobs.get(cache_->local_user_blobs_in("U1000"), "triton", "k", "k.cubin");
  ASSERT_TRUE(back && back->has_value());
  EXPECT_EQ((*back)->entry->artifact.bytes, "user's");
  Result<std::vector<StoredKey>> listed = cache_->local_user_blobs_in("U1000").list();
  EXPECT_EQ(keys_of(listed), std::vector<std::string>{users->cache_key});
  // A second put of the same identity is told it changed nothing.
  Result<BlobPutOutcome> again = blobs.put(cache_->local_user_blobs_in("U1000"), "triton", "k", "k.cubin", "other");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->already_stored);
  EXPECT_TRUE(again->conflict);
}

// A daemon opened again on the same directory (a restart, another daemon
// sharing it) names a user's blobs as before, and sets right the modes of
// files and directories written before.
TEST_F(NamespacedCacheTest, TheSecretOutlivesTheDaemonAndScansSetModesRight) {
  const std::optional<NamesKey> before = cache_->names_key_for("U1000");
  const std::string id = cache_->names_secret_id();
  ASSERT_TRUE(before);
  EXPECT_EQ(id.size(), 32u);
  cache_->compiles_in("tenant").put(entry_of(key_, "tenant's compile"));
  const std::string root = cache_->disk_layout()->root;
  const std::string stored = namespaced_key(key_, "tenant");
  const std::string path = root + "/" + stored.substr(0, 2) + "/" + stored + ".kjit";
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  cache_.reset();
  std::shared_ptr<DaemonCache> again = DaemonCache::open(test::cache_config(dir_.path()));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->names_key_for("U1000"), before);
  EXPECT_EQ(again->names_secret_id(), id);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
}

TEST(BlobNameSecretTest, ASecretFileThatIsNotOneIsRefusedNotReplaced) {
  test::TempDir dir;
  {
    std::ofstream bad(dir.path() + "/blob-names.key");
    bad << "short";
  }
  Result<BlobNameSecret> secret = BlobNameSecret::load_or_create(dir.path());
  ASSERT_FALSE(secret);
  EXPECT_NE(secret.error().message.find("is not a blob names secret"), std::string::npos) << secret.error().message;
  std::ifstream kept(dir.path() + "/blob-names.key");
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "short");
}

TEST(BlobNameSecretTest, NamespacesGetKeysOfTheirOwn) {
  NamesKey secret{};
  secret.fill(9);
  BlobNameSecret names(secret);
  EXPECT_NE(names.key_for("U1000"), names.key_for("U1001"));
  EXPECT_EQ(names.key_for("U1000"), BlobNameSecret(secret).key_for("U1000"));
  EXPECT_NE(names.id(), "");
  secret.fill(10);
  EXPECT_NE(BlobNameSecret(secret).id(), names.id());
}

}  // namespace
}  // namespace kjit
