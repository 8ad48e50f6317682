#include "server/compile/daemon_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "cache/redis_leases.h"
#include "server/compile/blob_store.h"

namespace kjit {

std::shared_ptr<DaemonCache> DaemonCache::open(const CacheConfig& config) {
  if (!config.enabled) {
    spdlog::info("compile cache off: every request compiles");
    return nullptr;
  }
  std::shared_ptr<DaemonCache> cache(new DaemonCache);
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
    // Other users on the host pass the directories without listing them,
    // and read what they can name and may have: the shared compile entries
    // (LocalCache reads them by key) and their own blobs, whose names they
    // alone can make (blob_file_names.h). The rest is kjitd's user's.
    options.directory_mode = 0711;
    options.entry_mode = [](std::string_view stored) -> unsigned {
      const NamespacedKey split = split_namespaced_key(stored);
      const bool shared_compile = split.ns.empty() && !is_blob_cache_key(split.key);
      return split.tagged || shared_compile ? 0644 : 0600;
    };
    Result<std::unique_ptr<DiskStore>> disk = DiskStore::open(options);
    if (disk) {
      cache->disk_ = std::move(disk.value());
      tiers.disk = cache->disk_;
      spdlog::info("disk cache at {} (bound {} bytes)", options.directory, options.max_bytes);
      if (Result<BlobNameSecret> secret = BlobNameSecret::load_or_create(options.directory); secret)
        cache->names_secret_ = *secret;
      else
        spdlog::warn("users' blobs are read over the socket only (no direct reads): {}", secret.error().message);
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
    cache->redis_ =
        std::make_shared<RedisStore>(redis, RedisStore::Options{.ttl = std::chrono::seconds(config.redis_ttl_seconds)});
    tiers.redis = cache->redis_;
    leases = std::make_shared<RedisLeases>(redis);
    spdlog::info("redis cache at {} (ttl {} s)", config.redis, config.redis_ttl_seconds);
  }
  cache->tiers_ = std::make_shared<TieredCache>(tiers);
  cache->blob_tiers_ = std::make_shared<TieredCache>(tiers);
  CompileCoalescer::Options once;
  once.max_wait = std::chrono::milliseconds(config.lease_wait_ms);
  cache->claims_ = std::make_shared<KeyClaims>(leases, KeyClaims::Options{});
  cache->once_ = std::make_shared<CompileCoalescer>(cache->tiers_, std::move(leases), once);
  return cache;
}

NamespacedCache DaemonCache::compiles_in(std::string ns) const {
  return NamespacedCache(tiers_.get(), disk_.get(), once_.get(), std::move(ns));
}

NamespacedCache DaemonCache::blobs_in(std::string ns) const {
  return NamespacedCache(blob_tiers_.get(), disk_.get(), nullptr, std::move(ns));
}

NamespacedCache DaemonCache::local_user_blobs_in(std::string ns) const {
  std::optional<NamesKey> names_key = names_key_for(ns);
  return NamespacedCache(blob_tiers_.get(), disk_.get(), nullptr, std::move(ns), names_key);
}

std::optional<NamesKey> DaemonCache::names_key_for(std::string_view ns) const {
  if (!names_secret_) return std::nullopt;
  return names_secret_->key_for(ns);
}

Result<DiskStore::VerifyReport> DaemonCache::verify_disk() const {
  if (!disk_) return make_error(ErrorCode::failed_precondition, "the disk cache tier is off on this daemon");
  return disk_->verify();
}

Result<DiskStore::GcReport> DaemonCache::gc_disk(uint64_t max_bytes) const {
  if (!disk_) return make_error(ErrorCode::failed_precondition, "the disk cache tier is off on this daemon");
  return disk_->gc(max_bytes);
}

std::optional<DaemonCache::DiskLayout> DaemonCache::disk_layout() const {
  if (!disk_) return std::nullopt;
  return DiskLayout{disk_->root(), disk_->touch_interval()};
}

}  // namespace kjit
