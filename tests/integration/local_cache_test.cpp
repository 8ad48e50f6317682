// LocalCache: the client library's direct read of the disk tier, against
// entries a real kjitd compiled and entries DiskStore wrote; misses, bad
// keys and corrupt entries.
#include "kjit/local_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache/disk_store.h"
#include "kjit/client.h"
#include "sample_entries.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

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

}  // namespace
}  // namespace kjit::test
