// Opening a disk tier of 100k entries (10k under sanitizers) reads no entry (sizes come from stat);
// the time is printed, not asserted (timed assertions belong in bench/).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cache/disk_store.h"
#include "sample_entries.h"
#include "temp_dir.h"

namespace kjit {
namespace {

TEST(DiskStoreStartup, OpensOneHundredThousandEntriesFromFileSizesAlone) {
  test::TempDir dir;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Sanitized Debug builds put ~50x slower; the figure there means nothing.
  constexpr int k_entries = 10'000;
#else
  constexpr int k_entries = 100'000;
#endif
  const auto fill_start = std::chrono::steady_clock::now();
  {
    Result<std::unique_ptr<DiskStore>> store = DiskStore::open({.directory = dir.path(), .sync = false});
    ASSERT_TRUE(store.ok());
    DiskStore& disk = **store;
    const CacheEntry templ = test::make_entry(test::key_for(0), std::string(200, 'p'));
    std::atomic<int> failed{0};
    std::vector<std::thread> fillers;
    for (int t = 0; t < 2; ++t) {
      fillers.emplace_back([&, t] {
        CacheEntry entry = templ;
        for (int i = t; i < k_entries; i += 2) {
          entry.key = test::key_for(i);
          if (!disk.put(entry).ok()) ++failed;
        }
      });
    }
    for (std::thread& t : fillers) t.join();
    ASSERT_EQ(failed.load(), 0);
  }
  std::printf("[ info ] filled %d entries in %.1f s\n", k_entries,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count());
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<DiskStore>> reopened = DiskStore::open({.directory = dir.path()});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(reopened.ok());
  std::printf("[ info ] DiskStore::open with %d entries: %.1f ms\n", k_entries, ms);
  EXPECT_EQ((*reopened)->stats().entries, uint64_t{k_entries});
  EXPECT_TRUE((*reopened)->get(test::key_for(k_entries - 1)).value().has_value());
}

}  // namespace
}  // namespace kjit
