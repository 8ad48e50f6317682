// The disk tier in one process: persistence, verification on read, LRU
// eviction within the byte bound, gc, verify, temp-file cleanup. (The Store
// contract is store_contract_test.cpp.)
#include "cache/disk_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/atomic_file.h"
#include "sample_entries.h"
#include "temp_dir.h"

namespace kjit {
namespace {

using test::key_for;
using test::make_entry;

std::unique_ptr<DiskStore> open_store(const std::string& dir, DiskStore::Options options = {}) {
  options.directory = dir;
  Result<std::unique_ptr<DiskStore>> store = DiskStore::open(options);
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
  return store.ok() ? std::move(store).value() : nullptr;
}

std::optional<CacheEntry> get(DiskStore& store, const std::string& key) {
  Result<std::optional<CacheEntry>> got = store.get(key);
  EXPECT_TRUE(got.ok()) << (got.ok() ? "" : got.error().message);
  return got.ok() ? *got : std::nullopt;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

uint64_t bytes_on_disk(DiskStore& store) {
  uint64_t total = 0;
  const std::vector<StoredKey> listed = store.list().value();
  for (const StoredKey& k : listed) total += k.bytes;
  return total;
}

// File times come from a coarse kernel clock; spacing operations keeps
// their order visible in mtimes.
void tick() {
  std::this_thread::sleep_for(std::chrono::milliseconds(15));
}

TEST(DiskStore, EntryIsOneFileUnderAFanOutDirectory) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  CacheEntry entry = make_entry(key_for(1), "cubin bytes");
  ASSERT_TRUE(store->put(entry).ok());
  const std::string path = store->path_for(entry.key);
  EXPECT_EQ(path, dir.path() + "/v" + std::to_string(k_entry_format_version) + "/" + entry.key.substr(0, 2) + "/" + entry.key + ".kjit");
  EXPECT_EQ(read_file(path), encode_entry(entry));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(DiskStore, ReopenedStoreSeesEarlierEntries) {
  test::TempDir dir;
  {
    auto store = open_store(dir.path());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->put(make_entry(key_for(i), "payload " + std::to_string(i))).ok());
  }
  auto reopened = open_store(dir.path());
  EXPECT_EQ(reopened->stats().entries, 10u);
  for (int i = 0; i < 10; ++i) {
    std::optional<CacheEntry> got = get(*reopened, key_for(i));
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->artifact.bytes, "payload " + std::to_string(i));
  }
}

TEST(DiskStore, ReaderThatSkipsTheScanStillReadsAndAccountsOnFirstPut) {
  test::TempDir dir;
  {
    auto writer = open_store(dir.path());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(writer->put(make_entry(key_for(i), "shared")).ok());
  }
  auto reader = open_store(dir.path(), {.scan_on_open = false});
  EXPECT_EQ(reader->stats().entries, 0u);  // not scanned
  ASSERT_TRUE(get(*reader, key_for(1)).has_value());
  ASSERT_TRUE(reader->put(make_entry(key_for(3), "shared")).ok());
  EXPECT_EQ(reader->stats().entries, 4u);  // the first put rescanned
}

TEST(DiskStore, ConcurrentFirstPutsIntoNewDirectoriesAllSucceed) {
  test::TempDir dir;
  auto store = open_store(dir.path(), {.sync = false});
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i)
        if (!store->put(make_entry(key_for(t * 1000 + i), "x")).ok()) ++failed;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(store->stats().errors, 0u);
  EXPECT_EQ(store->list().value().size(), 1600u);
}

TEST(DiskStore, FlippedByteIsCountedCorruptionRemovedAndMisses) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  CacheEntry entry = make_entry(key_for(1), std::string(4096, 'c'));
  ASSERT_TRUE(store->put(entry).ok());
  const std::string path = store->path_for(entry.key);
  std::string bytes = read_file(path);
  bytes[bytes.size() - 100] ^= 0x20;  // inside the payload
  write_file(path, bytes);

  EXPECT_FALSE(get(*store, entry.key).has_value());
  EXPECT_FALSE(std::filesystem::exists(path));
  StoreStats stats = store->stats();
  EXPECT_EQ(stats.corruptions, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.entries, 0u);
  // The next put (the recompile) is served again.
  ASSERT_TRUE(store->put(entry).ok());
  EXPECT_TRUE(get(*store, entry.key).has_value());
}

TEST(DiskStore, ReadHeadTellsWhatAnEntryIsWithoutItsPayloadCountsOrRecency) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  CacheEntry blob = make_entry(key_for(1) + "-blob", std::string(1 << 20, 'p'));
  blob.artifact = Artifact{};
  blob.artifact.bytes = std::string(1 << 20, 'p');
  blob.blob = BlobIdentity{"client-blob-group", "ns", "key", "group"};
  CacheEntry compiled = make_entry(key_for(2), "cubin");
  ASSERT_TRUE(store->put(blob).ok());
  ASSERT_TRUE(store->put(compiled).ok());
  const std::string path = store->path_for(blob.key);
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  std::filesystem::last_write_time(path, old);
  const StoreStats before = store->stats();

  Result<std::optional<CacheEntry>> head = store->read_head(blob.key);
  ASSERT_TRUE(head.ok()) << head.error().message;
  ASSERT_TRUE(head->has_value());
  EXPECT_EQ((*head)->key, blob.key);
  EXPECT_EQ((*head)->blob, blob.blob);
  EXPECT_TRUE((*head)->artifact.bytes.empty());
  Result<std::optional<CacheEntry>> other = store->read_head(compiled.key);
  ASSERT_TRUE(other.ok() && other->has_value());
  EXPECT_FALSE((*other)->blob.has_value());
  EXPECT_EQ((*other)->artifact.kind, compiled.artifact.kind);
  Result<std::optional<CacheEntry>> none = store->read_head(key_for(3));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(std::filesystem::last_write_time(path), old);
  const StoreStats after = store->stats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);

  // A file cut short, or another entry's bytes under this key: nothing.
  const std::string bytes = read_file(path);
  write_file(path, bytes.substr(0, 80));
  Result<std::optional<CacheEntry>> cut = store->read_head(blob.key);
  ASSERT_TRUE(cut.ok());
  EXPECT_FALSE(cut->has_value());
  write_file(path, read_file(store->path_for(compiled.key)));
  Result<std::optional<CacheEntry>> foreign = store->read_head(blob.key);
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE(foreign->has_value());
}

TEST(DiskStore, TruncatedOrForeignFilesAreCorruptions) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  CacheEntry a = make_entry(key_for(1), "aaaa");
  CacheEntry b = make_entry(key_for(2), "bbbb");
  ASSERT_TRUE(store->put(a).ok());
  ASSERT_TRUE(store->put(b).ok());
  std::string bytes = read_file(store->path_for(a.key));
  write_file(store->path_for(a.key), bytes.substr(0, bytes.size() / 2));
  // b's file now holds a's entry: the key check catches it.
  write_file(store->path_for(b.key), bytes);
  EXPECT_FALSE(get(*store, a.key).has_value());
  EXPECT_FALSE(get(*store, b.key).has_value());
  EXPECT_EQ(store->stats().corruptions, 2u);
}

TEST(DiskStore, RemoveDeletesTheFile) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  CacheEntry entry = make_entry(key_for(1), "x");
  ASSERT_TRUE(store->put(entry).ok());
  ASSERT_TRUE(store->remove(entry.key).ok());
  EXPECT_FALSE(std::filesystem::exists(store->path_for(entry.key)));
  EXPECT_TRUE(store->remove(entry.key).ok());
  EXPECT_EQ(store->stats().entries, 0u);
}

TEST(DiskStore, KeysThatAreNotFileNamesAreRejected) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  for (std::string key : {"../../etc/passwd", "a/b", "", "x", "ab.cd"}) {
    EXPECT_FALSE(store->get(key).ok()) << key;
    CacheEntry entry = make_entry(key, "x");
    EXPECT_FALSE(store->put(entry).ok()) << key;
  }
}

TEST(DiskStore, EvictsLeastRecentlyUsedWhenOverItsByteBound) {
  test::TempDir dir;
  const uint64_t one = encode_entry(make_entry(key_for(1), std::string(2000, 'x'))).size();
  auto store = open_store(dir.path(), {.max_bytes = 3 * one + one / 2, .touch_interval = std::chrono::milliseconds(0)});
  for (int i : {1, 2, 3}) {
    ASSERT_TRUE(store->put(make_entry(key_for(i), std::string(2000, 'x'))).ok());
    tick();
  }
  ASSERT_TRUE(get(*store, key_for(1)).has_value());  // 2 is now the least recently used
  tick();
  ASSERT_TRUE(store->put(make_entry(key_for(4), std::string(2000, 'x'))).ok());
  EXPECT_FALSE(std::filesystem::exists(store->path_for(key_for(2))));
  for (int i : {1, 3, 4}) EXPECT_TRUE(std::filesystem::exists(store->path_for(key_for(i)))) << i;
  EXPECT_EQ(store->stats().evictions, 1u);
  EXPECT_LE(bytes_on_disk(*store), 3 * one + one / 2);
}

TEST(DiskStore, StaysWithinItsBoundUnderAStreamOfNewEntries) {
  test::TempDir dir;
  const uint64_t max_bytes = 64 * 1024;
  auto store = open_store(dir.path(), {.max_bytes = max_bytes, .sync = false});
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(store->put(make_entry(key_for(i), std::string(500 + (i * 37) % 3000, 'x'))).ok());
    ASSERT_LE(bytes_on_disk(*store), max_bytes) << "after entry " << i;
    ASSERT_LE(store->stats().bytes, max_bytes);
  }
  EXPECT_GT(store->stats().evictions, 0u);
  EXPECT_TRUE(get(*store, key_for(299)).has_value());  // the newest survives
}

TEST(DiskStore, RescanSeesOtherWritersAndEnforcesTheBound) {
  test::TempDir dir;
  const uint64_t max_bytes = 32 * 1024;
  auto bounded = open_store(dir.path(), {.max_bytes = max_bytes, .rescan_interval = std::chrono::seconds(0)});
  auto other = open_store(dir.path(), {.sync = false});  // another process, with a larger bound
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(other->put(make_entry(key_for(i), std::string(2000, 'o'))).ok());
  ASSERT_GT(bytes_on_disk(*bounded), max_bytes);
  ASSERT_TRUE(bounded->put(make_entry(key_for(100), "mine")).ok());
  EXPECT_LE(bytes_on_disk(*bounded), max_bytes);
  EXPECT_GT(bounded->stats().evictions, 0u);
  EXPECT_EQ(bounded->stats().bytes, bytes_on_disk(*bounded));
}

TEST(DiskStore, GcRemovesTheOldestDownToTheLimit) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  const uint64_t one = encode_entry(make_entry(key_for(0), std::string(1000, 'x'))).size();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(store->put(make_entry(key_for(i), std::string(1000, 'x'))).ok());
    tick();
  }
  Result<DiskStore::GcReport> report = store->gc(2 * one);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_before, 6u);
  EXPECT_EQ(report->removed_entries, 4u);
  EXPECT_EQ(report->entries_after, 2u);
  EXPECT_EQ(report->bytes_after, 2 * one);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(get(*store, key_for(i)).has_value()) << i;
  for (int i = 4; i < 6; ++i) EXPECT_TRUE(get(*store, key_for(i)).has_value()) << i;
  EXPECT_EQ(store->stats().entries, 2u);
}

TEST(DiskStore, VerifyRemovesOnlyBadEntries) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->put(make_entry(key_for(i), std::string(300, 'v'))).ok());
  std::string bytes = read_file(store->path_for(key_for(3)));
  bytes[70] ^= 1;
  write_file(store->path_for(key_for(3)), bytes);
  Result<DiskStore::VerifyReport> report = store->verify();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->checked, 5u);
  EXPECT_EQ(report->removed, 1u);
  EXPECT_EQ(store->stats().corruptions, 1u);
  EXPECT_FALSE(std::filesystem::exists(store->path_for(key_for(3))));
  EXPECT_EQ(store->list().value().size(), 4u);
}

TEST(DiskStore, AHitRefreshesTheSharedRecency) {
  test::TempDir dir;
  auto store = open_store(dir.path(), {.touch_interval = std::chrono::milliseconds(0)});
  ASSERT_TRUE(store->put(make_entry(key_for(1), "x")).ok());
  const std::string path = store->path_for(key_for(1));
  const timespec old_times[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), old_times, 0), 0);
  ASSERT_TRUE(get(*store, key_for(1)).has_value());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GT(st.st_mtim.tv_sec, 1'000'000'000 + 1000);
}

// A temp file whose writer holds its lock is a live writer's, however old;
// one nobody holds is a dead writer's, however fresh, and goes at the next
// scan (a start, gc or verify). Open file description locks conflict between
// two opens in one process as between processes, so one process plays both.
TEST(DiskStore, DeadWritersTempFilesGoAtOnceLiveOnesStay) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store->put(make_entry(key_for(1), "x")).ok());
  const std::string fan = dir.path() + "/v" + std::to_string(k_entry_format_version) + "/" + key_for(1).substr(0, 2);
  const std::string dead = fan + "/" + std::string(k_atomic_temp_prefix) + "dead-writer";
  const std::string live = fan + "/" + std::string(k_atomic_temp_prefix) + "live-writer";
  write_file(dead, "partial");
  write_file(live, "partial");
  const timespec old_times[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, live.c_str(), old_times, 0), 0);  // old, yet its writer is alive
  const int writer = ::open(live.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(writer, F_OFD_SETLK, &lock), 0) << std::strerror(errno);

  auto reopened = open_store(dir.path());
  EXPECT_FALSE(std::filesystem::exists(dead)) << "a fresh temp file nobody writes survived the start";
  EXPECT_TRUE(std::filesystem::exists(live)) << "a live writer's temp file was removed";
  EXPECT_EQ(reopened->stats().entries, 1u);  // temp files are never entries

  // Its writer dies (its descriptions close): verify reports and removes it.
  ::close(writer);
  Result<DiskStore::VerifyReport> verified = reopened->verify();
  ASSERT_TRUE(verified) << verified.error().message;
  EXPECT_EQ(verified->temp_files_removed, 1u);
  EXPECT_EQ(verified->removed, 0u);
  EXPECT_FALSE(std::filesystem::exists(live));
}

// A writer holds its temp file's lock until its rename, so a scan running
// beside puts never removes a file being written: every put succeeds.
TEST(DiskStore, ScansBesideWritersNeverTakeALiveWritersFile) {
  test::TempDir dir;
  auto store = open_store(dir.path());
  std::atomic<bool> done{false};
  std::atomic<int> failed{0};
  std::string first_error;
  std::thread writer([&] {
    for (int i = 0; i < 300; ++i) {
      Status put = store->put(make_entry(key_for(i % 4), std::string(4096, 'x')));
      if (!put.ok() && failed++ == 0) first_error = put.error().message;
    }
    done = true;
  });
  int scans = 0;
  while (!done) {
    ASSERT_NE(open_store(dir.path()), nullptr);  // each open scans the directory
    ++scans;
  }
  writer.join();
  EXPECT_EQ(failed.load(), 0) << "a put failed while " << scans << " scans ran beside it: " << first_error;
}

TEST(AtomicFile, ReplacesWholeAndLeavesNoTempOnFailure) {
  test::TempDir dir;
  const std::string path = dir.path() + "/file";
  ASSERT_TRUE(write_file_atomically(path, "first").ok());
  ASSERT_TRUE(write_file_atomically(path, "second").ok());
  EXPECT_EQ(read_file(path), "second");
  EXPECT_FALSE(write_file_atomically(dir.path() + "/missing/file", "x").ok());
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

}  // namespace
}  // namespace kjit
