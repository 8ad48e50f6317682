// kjit_bench_quota: a tenant writing ten times its share ([[tenants]]
// max_bytes) against another tenant's hit rate. In one process, over the
// daemon's own cache (DaemonCache: memory and disk tiers in a temporary
// directory): "steady" stores a working set and reads all of it after each
// share's worth that "noisy" writes, ten times, so noisy writes 10x its
// share; then again with steady reading once, after the whole flood. Each
// with noisy's share in force and without; prints
// steady's hits per tier and its hit rate before and during the flood, and
// what each tenant holds. Exits 1 when steady lost a hit with the share in
// force.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <filesystem>
#include <string>
#include <vector>

#include "server/compile/daemon_cache.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

namespace fs = std::filesystem;

struct Sizes {
  uint64_t memory_bytes, disk_bytes, share, entry_bytes, working_set;
};

std::string key_of(const std::string& who, int i) {
  char hex[65];
  std::snprintf(hex, sizeof hex, "%032x%032x", static_cast<unsigned>(std::hash<std::string>{}(who)), i);
  return hex;
}

CacheEntry entry_of(const std::string& key, uint64_t bytes) {
  CacheEntry entry;
  entry.key = key;
  entry.artifact.bytes.assign(bytes, 'k');
  entry.compile_ms = 100;
  return entry;
}

struct Reads {
  uint64_t memory = 0, disk = 0, miss = 0;
  uint64_t total() const { return memory + disk + miss; }
  double hit_rate() const { return total() ? 100.0 * static_cast<double>(memory + disk) / static_cast<double>(total()) : 0; }
};

// steady reads its whole working set.
Reads read_all(const NamespacedCache& steady, int entries) {
  Reads out;
  for (int i = 0; i < entries; ++i) {
    std::optional<CacheHit> hit = steady.get(key_of("steady", i));
    if (!hit)
      ++out.miss;
    else if (hit->tier == CacheTier::memory)
      ++out.memory;
    else
      ++out.disk;
  }
  return out;
}

struct Run {
  Reads before, during;
  NamespaceStats steady, noisy;
};

// rounds: how many times steady reads its set during the flood, evenly.
Run run(const Sizes& sizes, bool with_share, int rounds, const std::string& directory) {
  fs::remove_all(directory);
  CacheConfig config;
  config.memory_bytes = sizes.memory_bytes;
  config.disk_bytes = sizes.disk_bytes;
  config.directory = directory;
  std::shared_ptr<DaemonCache> cache = DaemonCache::open(config);
  if (with_share) cache->set_quotas({{"noisy", sizes.share}});
  const NamespacedCache steady = cache->compiles_in("steady");
  const NamespacedCache noisy = cache->compiles_in("noisy");
  const int steady_entries = static_cast<int>(sizes.working_set / sizes.entry_bytes);
  for (int i = 0; i < steady_entries; ++i) steady.put(entry_of(key_of("steady", i), sizes.entry_bytes));
  Run out;
  out.before = read_all(steady, steady_entries);
  const int per_round = static_cast<int>(10 * sizes.share / sizes.entry_bytes) / rounds;
  int written = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < per_round; ++i, ++written) noisy.put(entry_of(key_of("noisy", written), sizes.entry_bytes));
    const Reads reads = read_all(steady, steady_entries);
    out.during.memory += reads.memory;
    out.during.disk += reads.disk;
    out.during.miss += reads.miss;
  }
  out.steady = cache->namespace_stats("steady");
  out.noisy = cache->namespace_stats("noisy");
  return out;
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return text;
}

std::string percent(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", value);
  return text;
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  using namespace kjit;
  using namespace kjit::bench;
  CLI::App app{"kjit_bench_quota: a tenant writing 10x its share against another tenant's hit rate"};
  uint64_t memory_mib = 32, disk_mib = 24, share_mib = 4, working_set_mib = 8, entry_kib = 64;
  std::string directory = (fs::temp_directory_path() / ("kjit-bench-quota-" + std::to_string(::getpid()))).string();
  app.add_option("--memory-mib", memory_mib, "the memory tier's bound");
  app.add_option("--disk-mib", disk_mib, "the disk tier's bound");
  app.add_option("--share-mib", share_mib, "noisy's share (max_bytes)");
  app.add_option("--working-set-mib", working_set_mib, "what steady stores and reads");
  app.add_option("--entry-kib", entry_kib, "each entry's size");
  app.add_option("--directory", directory, "the disk tier's directory (removed before and after)");
  CLI11_PARSE(app, argc, argv);
  const Sizes sizes{memory_mib << 20, disk_mib << 20, share_mib << 20, entry_kib << 10, working_set_mib << 20};
  std::printf("memory tier %s MiB, disk tier %s MiB; steady stores %s MiB; noisy writes %s MiB (10x a %s MiB share) "
              "in %s KiB entries\n\n",
              mib(sizes.memory_bytes).c_str(), mib(sizes.disk_bytes).c_str(), mib(sizes.working_set).c_str(),
              mib(10 * sizes.share).c_str(), mib(sizes.share).c_str(), std::to_string(entry_kib).c_str());
  TextTable table({"noisy's share", "steady reads", "steady hit rate before", "during flood", "memory hits", "disk hits", "misses",
                   "steady evicted", "noisy memory MiB", "noisy disk MiB", "noisy evicted"});
  bool lost = false;
  for (int rounds : {10, 1})
  for (bool with_share : {true, false}) {
    const Run r = run(sizes, with_share, rounds, directory);
    table.add_row({with_share ? mib(sizes.share) + " MiB" : "none",
                   rounds == 1 ? "after the flood" : "after each share's worth", percent(r.before.hit_rate()),
                   percent(r.during.hit_rate()), std::to_string(r.during.memory), std::to_string(r.during.disk),
                   std::to_string(r.during.miss),
                   std::to_string(r.steady.memory_evictions + r.steady.disk_evictions), mib(r.noisy.memory_bytes),
                   mib(r.noisy.disk_bytes), std::to_string(r.noisy.memory_evictions + r.noisy.disk_evictions)});
    if (with_share)
      lost |= r.during.memory != r.during.total() || r.steady.memory_evictions + r.steady.disk_evictions > 0;
  }
  fs::remove_all(directory);
  table.print();
  if (lost) std::printf("\nsteady lost hits with noisy's share in force\n");
  return lost ? 1 : 0;
}
