// The disk tier shared by processes: concurrent writers and readers never
// see a torn or mixed entry, and a writer killed mid-write leaves no visible
// partial entry.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "cache/atomic_file.h"
#include "cache/disk_store.h"
#include "sample_entries.h"
#include "temp_dir.h"

namespace kjit {
namespace {

using Clock = std::chrono::steady_clock;
using test::entry_is_consistent;
using test::key_for;
using test::make_versioned_entry;

struct ChildReport {
  uint64_t puts = 0, gets = 0, hits = 0, inconsistent = 0, corruptions = 0, errors = 0;
};

std::unique_ptr<DiskStore> open_store(const std::string& dir, uint64_t max_bytes) {
  Result<std::unique_ptr<DiskStore>> store = DiskStore::open({.directory = dir, .max_bytes = max_bytes});
  return store.ok() ? std::move(store).value() : nullptr;
}

// Each child goes on past its duration until it has done this many puts
// and hits (bounded by k_hammer_limit): a loaded machine gets through fewer
// operations in the same time, and the test counts what was done.
constexpr uint64_t k_min_puts_and_hits = 16;
constexpr auto k_hammer_limit = std::chrono::seconds(60);

// Runs in a forked child: no gtest assertions here, only counting.
ChildReport hammer(const std::string& dir, int writer, std::chrono::milliseconds duration) {
  ChildReport report;
  std::unique_ptr<DiskStore> store = open_store(dir, 512 * 1024);  // small: gc runs while others read
  if (!store) {
    report.errors = 1;
    return report;
  }
  std::mt19937 random(writer * 7919 + 1);
  const auto start = Clock::now();
  auto going = [&] {
    const auto now = Clock::now();
    if (now < start + duration) return true;
    return now < start + k_hammer_limit && (report.puts < k_min_puts_and_hits || report.hits < k_min_puts_and_hits);
  };
  for (int sequence = 0; going(); ++sequence) {
    const std::string key = key_for(static_cast<int>(random() % 24));
    if (random() % 2 == 0) {
      const size_t size = 1 + random() % (64 * 1024);
      if (store->put(make_versioned_entry(key, writer, sequence, size)).ok())
        ++report.puts;
      else
        ++report.errors;
    } else {
      ++report.gets;
      Result<std::optional<CacheEntry>> got = store->get(key);
      if (!got.ok())
        ++report.errors;
      else if (got->has_value()) {
        ++report.hits;
        if (!entry_is_consistent(**got, key)) ++report.inconsistent;
      }
    }
  }
  report.corruptions = store->stats().corruptions;
  report.errors += store->stats().errors;
  return report;
}

TEST(DiskStoreProcesses, ConcurrentWritersAndReadersNeverSeeATornOrMixedEntry) {
  test::TempDir dir;
  constexpr int k_processes = 8;
  std::vector<std::pair<pid_t, int>> children;  // pid, read end of its report pipe
  for (int writer = 0; writer < k_processes; ++writer) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      ChildReport report = hammer(dir.path(), writer, std::chrono::milliseconds(2500));
      ssize_t written = ::write(fds[1], &report, sizeof(report));
      ::_exit(written == sizeof(report) ? 0 : 1);
    }
    ::close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  ChildReport total;
  for (auto [pid, fd] : children) {
    ChildReport report;
    ASSERT_EQ(::read(fd, &report, sizeof(report)), ssize_t(sizeof(report)));
    ::close(fd);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    total.puts += report.puts;
    total.gets += report.gets;
    total.hits += report.hits;
    total.inconsistent += report.inconsistent;
    total.corruptions += report.corruptions;
    total.errors += report.errors;
  }
  std::printf("[ info ] %d processes: %llu puts, %llu gets, %llu hits\n", k_processes, (unsigned long long)total.puts,
              (unsigned long long)total.gets, (unsigned long long)total.hits);
  EXPECT_GT(total.puts, 100u);
  EXPECT_GT(total.hits, 100u);
  EXPECT_EQ(total.inconsistent, 0u);
  EXPECT_EQ(total.corruptions, 0u);
  EXPECT_EQ(total.errors, 0u);

  std::unique_ptr<DiskStore> store = open_store(dir.path(), 512 * 1024);
  ASSERT_NE(store, nullptr);
  Result<DiskStore::VerifyReport> verified = store->verify();
  ASSERT_TRUE(verified.ok());
  EXPECT_EQ(verified->removed, 0u);
  EXPECT_GT(verified->checked, 0u);
}

TEST(DiskStoreProcesses, WriterKilledMidWriteLeavesNoVisiblePartialEntry) {
  test::TempDir dir;
  std::mt19937 random(2024);
  constexpr int k_keys = 3;
  {
    // The old state every key must keep if no new version was published whole.
    std::unique_ptr<DiskStore> store = open_store(dir.path(), 1ull << 30);
    for (int i = 0; i < k_keys; ++i) ASSERT_TRUE(store->put(make_versioned_entry(key_for(i), 99, 0, 1000)).ok());
  }
  for (int round = 0; round < 8; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::unique_ptr<DiskStore> store = open_store(dir.path(), 1ull << 30);
      for (int sequence = 0;; ++sequence) {
        const std::string key = key_for(sequence % k_keys);
        // Large entries keep the writer inside write/fsync most of the time.
        (void)store->put(make_versioned_entry(key, round, sequence, (2 << 20) + sequence));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 120));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status));
  }

  std::unique_ptr<DiskStore> store = open_store(dir.path(), 1ull << 30);
  ASSERT_NE(store, nullptr);
  int present = 0;
  for (int i = 0; i < k_keys; ++i) {
    Result<std::optional<CacheEntry>> got = store->get(key_for(i));
    ASSERT_TRUE(got.ok());
    if (got->has_value()) {
      ++present;
      EXPECT_TRUE(entry_is_consistent(**got, key_for(i)));
    }
  }
  EXPECT_EQ(present, k_keys);
  EXPECT_EQ(store->stats().corruptions, 0u);
  const std::vector<StoredKey> all = store->list().value();
  for (const StoredKey& listed : all) {
    EXPECT_TRUE(listed.key == key_for(0) || listed.key == key_for(1) || listed.key == key_for(2)) << listed.key;
  }

  // The killed writers' temp files are not entries, and the next scan
  // removes them at once: their writers' locks died with them.
  Result<std::unique_ptr<DiskStore>> cleaner = DiskStore::open({.directory = dir.path(), .max_bytes = 1ull << 30});
  ASSERT_TRUE(cleaner.ok());
  for (const auto& file : std::filesystem::recursive_directory_iterator(dir.path()))
    EXPECT_FALSE(is_atomic_temp_name(file.path().filename().string())) << file.path();
  EXPECT_EQ((*cleaner)->verify().value().removed, 0u);
}

}  // namespace
}  // namespace kjit
