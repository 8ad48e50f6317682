// LocalCache: the client library's direct read of the disk tier, against
// entries a real kjitd compiled and entries DiskStore wrote; misses, bad
// keys and corrupt entries.
#include "kjit/local_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "cache/disk_store.h"
#include "kjit/client.h"
#include "sample_entries.h"
#include "server/compile/blob_store.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Writes entry into directory as a daemon would (no fsync: tests only).
void put_entry(const std::string& directory, const CacheEntry& entry) {
  DiskStore::Options options;
  options.directory = directory;
  options.sync = false;
  auto store = DiskStore::open(options);
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->put(entry));
}

std::string entry_path(const std::string& directory, const std::string& key) {
  DiskStore::Options options;
  options.directory = directory;
  options.scan_on_open = false;
  return DiskStore::open(options).value()->path_for(key);
}

TEST(LocalCache, ReadsWhatTheDaemonCompiled) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TempDir dir;
  const std::string cache_dir = dir.path() + "/cache";
  CompileRequest request;
  request.input = k_templated;
  request.target = "cuda:90";
  request.name_expressions = {"scale<float>"};
  TestDaemon daemon({"--cache-dir", cache_dir});
  auto compiled = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(compiled) << compiled.error().message;
  ASSERT_EQ(compiled->cache, "compiled");
  daemon.stop();  // read with the daemon gone: no RPC is involved

  auto cache = LocalCache::open(cache_dir);
  ASSERT_TRUE(cache) << cache.error().message;
  auto read = cache->get(compiled->key);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->has_value());
  const CompileResult& local = **read;
  EXPECT_EQ(local.cache, "local-disk");
  EXPECT_EQ(local.artifact, compiled->artifact);
  EXPECT_EQ(local.artifact_kind, compiled->artifact_kind);
  EXPECT_EQ(local.key, compiled->key);
  EXPECT_EQ(local.key_components, compiled->key_components);
  EXPECT_EQ(local.kernels, compiled->kernels);
  EXPECT_EQ(local.lowered_names, compiled->lowered_names);
  ASSERT_EQ(local.lowered_names.count("scale<float>"), 1u);
  EXPECT_EQ(local.target, compiled->target);
  EXPECT_EQ(local.pipeline, compiled->pipeline);
}

TEST(LocalCache, MapsEveryFieldOfADiskEntry) {
  TempDir dir;
  const CacheEntry entry = make_entry(key_for(1), std::string(5000, '\x42'));
  put_entry(dir.path(), entry);

  auto cache = LocalCache::open(dir.path());
  ASSERT_TRUE(cache) << cache.error().message;
  auto read = cache->get(entry.key);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->has_value());
  const CompileResult& r = **read;
  const Artifact& a = entry.artifact;
  EXPECT_EQ(r.cache, "local-disk");
  EXPECT_EQ(r.key, entry.key);
  EXPECT_EQ(r.artifact, a.bytes);
  EXPECT_EQ(r.artifact_kind, a.kind);
  EXPECT_EQ(r.target, a.target);
  EXPECT_EQ(r.kernels, a.kernels);
  EXPECT_EQ(r.lowered_names, a.lowered_names);
  EXPECT_EQ(r.key_components, a.key_components);
  EXPECT_EQ(r.pipeline, a.pipeline);
  EXPECT_EQ(r.notes, a.notes);
  EXPECT_EQ(r.log, a.log);
  EXPECT_EQ(r.server_ms, 0);
  // One timing for this read, not the stages of the compile that made it.
  ASSERT_EQ(r.timings.size(), 1u);
  EXPECT_EQ(r.timings[0].stage, "cache");
  ASSERT_EQ(r.timings[0].passes.size(), 1u);
  EXPECT_EQ(r.timings[0].passes[0].pass, "lookup-local-disk");
}

TEST(LocalCache, AbsentKeyIsAMissNotAnError) {
  TempDir dir;
  auto cache = LocalCache::open(dir.path());
  ASSERT_TRUE(cache) << cache.error().message;
  auto read = cache->get(key_for(2));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_FALSE(read->has_value());
}

TEST(LocalCache, OpeningAMissingDirectoryCreatesIt) {
  TempDir dir;
  const std::string missing = dir.path() + "/not/yet";
  auto cache = LocalCache::open(missing);
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_TRUE(fs::is_directory(missing));
}

TEST(LocalCache, AStringThatCannotBeAKeyIsInvalidArgument) {
  TempDir dir;
  auto cache = LocalCache::open(dir.path());
  ASSERT_TRUE(cache);
  for (const std::string bad : {"../../etc/passwd", "", "a", "key with spaces"}) {
    auto read = cache->get(bad);
    ASSERT_FALSE(read) << "'" << bad << "' was accepted";
    EXPECT_EQ(read.error().code, ErrorCode::invalid_argument);
  }
}

TEST(LocalCache, CorruptEntryIsAMissAndIsRemoved) {
  TempDir dir;
  const CacheEntry entry = make_entry(key_for(3), std::string(5000, '\x17'));
  put_entry(dir.path(), entry);
  const std::string path = entry_path(dir.path(), entry.key);
  ASSERT_TRUE(fs::exists(path));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(path) - 100));
    file.put('\x99');  // inside the payload: only the checksum can tell
  }
  auto cache = LocalCache::open(dir.path());
  ASSERT_TRUE(cache);
  auto read = cache->get(entry.key);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_FALSE(read->has_value());
  EXPECT_FALSE(fs::exists(path)) << "the corrupt entry was left for the next reader";
}

TEST(LocalCache, AHitCountsAsAUseForEviction) {
  TempDir dir;
  const CacheEntry entry = make_entry(key_for(4), "cubin");
  put_entry(dir.path(), entry);
  const std::string path = entry_path(dir.path(), entry.key);
  // Made old, so that the touch interval (1 s) is long past.
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(path, old);
  auto cache = LocalCache::open(dir.path());
  ASSERT_TRUE(cache);
  auto read = cache->get(entry.key);
  ASSERT_TRUE(read && read->has_value());
  EXPECT_GT(fs::last_write_time(path), old + std::chrono::minutes(59));
}


// A blob entry as kjitd stores one for the operator (the default namespace:
// plain names), under the daemon's own key derivation.
CacheEntry blob_entry(std::string_view kind, const std::string& ns, const std::string& key, const std::string& name,
                      std::string bytes) {
  CacheEntry entry;
  entry.key = blob_cache_key(kind, ns, key, name);
  entry.artifact.bytes = std::move(bytes);
  entry.blob = BlobIdentity{std::string(kind), ns, key, name};
  return entry;
}

TEST(LocalCache, ReadsABlobGroupAsTheDaemonStoresIt) {
  TempDir dir;
  put_entry(dir.path(), blob_entry(k_blob_kind, "app", "K", "a.cubin", "cubin A"));
  put_entry(dir.path(), blob_entry(k_blob_kind, "app", "K", "b.json", "{}"));
  put_entry(dir.path(), blob_entry(k_blob_group_kind, "app", "K", "kernel", "a.cubin\nb.json"));
  auto cache = LocalCache::open(dir.path());
  ASSERT_TRUE(cache) << cache.error().message;
  auto group = cache->get_blob_group("app", "K", "kernel");
  ASSERT_TRUE(group) << group.error().message;
  ASSERT_TRUE(group->has_value());
  ASSERT_EQ((*group)->members.size(), 2u);
  EXPECT_EQ((*group)->members[0].name, "a.cubin");
  EXPECT_EQ((*group)->members[0].data, "cubin A");
  EXPECT_EQ((*group)->members[1].data, "{}");
  EXPECT_TRUE((*group)->complete());

  // Another group name, namespace or key is another entry: a miss.
  for (auto [ns, key, name] : {std::tuple{"app", "K", "other"}, {"other-app", "K", "kernel"}, {"app", "L", "kernel"}}) {
    auto missed = cache->get_blob_group(ns, key, name);
    ASSERT_TRUE(missed) << missed.error().message;
    EXPECT_FALSE(missed->has_value()) << ns << " " << key << " " << name;
  }
  // A group whose member is gone, or an entry recording another identity
  // under the group's key, is not served.
  put_entry(dir.path(), blob_entry(k_blob_group_kind, "app", "M", "kernel", "a.cubin"));
  CacheEntry forged = blob_entry(k_blob_group_kind, "app", "N", "kernel", "a.cubin");
  forged.blob->key = "K";
  put_entry(dir.path(), forged);
  for (const char* key : {"M", "N"}) {
    auto missed = cache->get_blob_group("app", key, "kernel");
    ASSERT_TRUE(missed) << missed.error().message;
    EXPECT_FALSE(missed->has_value()) << key;
  }
}

// A program that compiles for itself: one holder of a group's claim at a
// time, a waiter that gets the group once the holder puts it, and later
// callers that read it here without asking the daemon.
TEST(LocalCache, ClaimsABlobGroupOnAMissAndReadsItLocallyOncePut) {
  TempDir dir;
  const std::string cache_dir = dir.path() + "/cache";
  TestDaemon daemon({"--cache-dir", cache_dir});
  Client client(daemon.socket_path());
  auto cache = LocalCache::open(cache_dir);
  ASSERT_TRUE(cache) << cache.error().message;

  Result<BlobClaim> holder = cache->claim_blob_group(client, "nvrtc-app", "K", "kernel", 0ms);
  ASSERT_TRUE(holder) << holder.error().message;
  ASSERT_EQ(holder->outcome(), BlobClaim::Outcome::claimed);
  Result<BlobClaim> second = cache->claim_blob_group(client, "nvrtc-app", "K", "kernel", 0ms);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->outcome(), BlobClaim::Outcome::timed_out) << "one holder at a time";

  Result<CacheStats> before = client.cache_stats();
  ASSERT_TRUE(before);
  auto waiter = std::async(std::launch::async, [&] {
    return cache->claim_blob_group(Client(daemon.socket_path()), "nvrtc-app", "K", "kernel", 30s);
  });
  ASSERT_TRUE(eventually([&] {
    Result<CacheStats> stats = client.cache_stats();
    return stats && stats->blobs.claim_waits == before->blobs.claim_waits + 1;
  }));
  ASSERT_EQ(waiter.wait_for(0s), std::future_status::timeout) << "the waiter returned while the claim was held";
  ASSERT_TRUE(client.put_blob("nvrtc-app", "K", "k.cubin", "the cubin of K"));
  ASSERT_TRUE(client.put_blob_group("nvrtc-app", "K", "kernel", {"k.cubin"}));
  Result<BlobClaim> got = waiter.get();
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->outcome(), BlobClaim::Outcome::hit);
  ASSERT_EQ(got->group().members.size(), 1u);
  EXPECT_EQ(got->group().members[0].data, "the cubin of K");
  EXPECT_TRUE(holder->release()) << "fulfilled already: nothing to release";

  // Now on disk: read here, the client never asked (it names no daemon).
  Client nowhere(dir.path() + "/nobody.sock", ClientOptions{2s});
  Result<BlobClaim> local = cache->claim_blob_group(nowhere, "nvrtc-app", "K", "kernel", 30s);
  ASSERT_TRUE(local) << local.error().message;
  ASSERT_EQ(local->outcome(), BlobClaim::Outcome::hit);
  EXPECT_TRUE(local->claim_id().empty());
  ASSERT_EQ(local->group().members.size(), 1u);
  EXPECT_EQ(local->group().members[0].data, "the cubin of K");
  // A miss here goes to the daemon, which that client cannot reach.
  Result<BlobClaim> missed = cache->claim_blob_group(nowhere, "nvrtc-app", "L", "kernel", 0ms);
  ASSERT_FALSE(missed);
  EXPECT_EQ(missed.error().code, ErrorCode::unavailable) << missed.error().message;
}

}  // namespace
}  // namespace kjit::test
