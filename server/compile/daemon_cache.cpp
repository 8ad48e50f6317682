#include "server/compile/daemon_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "cache/redis_leases.h"

namespace kjit {

std::shared_ptr<DaemonCache> open_daemon_cache(const CacheConfig& config) {
  if (!config.enabled) {
    spdlog::info("compile cache off: every request compiles");
    return nullptr;
  }
  auto cache = std::make_shared<DaemonCache>();
  TieredCache::Tiers tiers;
  std::shared_ptr<LeaseStore> leases;  // null without Redis: one compile per key in this daemon only
  if (config.memory_bytes > 0) {
    MemoryStore::Options memory;
    memory.max_bytes = config.memory_bytes;
    // Every eighth of the budget evicted (at most 16 MiB): keeps resident
    // memory near the budget for a trim every few dozen large evictions.
    memory.release_memory_every = std::min<uint64_t>(config.memory_bytes / 8, 16ull << 20);
    tiers.memory = std::make_shared<MemoryStore>(memory);
  }
  if (config.disk) {
    DiskStore::Options options;
    options.directory = config.directory.empty() ? default_disk_cache_directory() : config.directory;
    options.max_bytes = config.disk_bytes;
    Result<std::unique_ptr<DiskStore>> disk = DiskStore::open(options);
    if (disk) {
      cache->disk = std::move(disk.value());
      tiers.disk = cache->disk;
      spdlog::info("disk cache at {} (bound {} bytes)", options.directory, options.max_bytes);
    } else {
      spdlog::warn("disk cache off: {}", disk.error().message);
    }
  }
  if (!config.redis.empty()) {
    RedisConnection::Options options;
    if (config.redis.front() == '/') {
      options.host = config.redis;
    } else {
      size_t colon = config.redis.rfind(':');
      options.host = config.redis.substr(0, colon);
      if (colon != std::string::npos) {
        std::string port = config.redis.substr(colon + 1);
        std::from_chars(port.data(), port.data() + port.size(), options.port);
      }
    }
    // One connection pool and breaker for the tier and the leases: an outage
    // seen by either skips both.
    auto redis = std::make_shared<RedisConnection>(options);
    cache->redis =
        std::make_shared<RedisStore>(redis, RedisStore::Options{.ttl = std::chrono::seconds(config.redis_ttl_seconds)});
    tiers.redis = cache->redis;
    leases = std::make_shared<RedisLeases>(redis);
    spdlog::info("redis cache at {} (ttl {} s)", config.redis, config.redis_ttl_seconds);
  }
  cache->tiers = std::make_shared<TieredCache>(tiers);
  CompileCoalescer::Options once;
  once.max_wait = std::chrono::milliseconds(config.lease_wait_ms);
  cache->once = std::make_shared<CompileCoalescer>(cache->tiers, std::move(leases), once);
  return cache;
}

}  // namespace kjit
