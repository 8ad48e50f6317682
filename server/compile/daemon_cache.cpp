#include "server/compile/daemon_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "cache/reapi_store.h"
#include "cache/redis_leases.h"
#include "server/compile/blob_store.h"
#include "server/config/reapi_headers.h"

namespace kjit {

std::shared_ptr<DaemonCache> DaemonCache::open(const CacheConfig& config) {
  if (!config.enabled) {
    spdlog::info("compile cache off: every request compiles");
    return nullptr;
  }
  std::shared_ptr<DaemonCache> cache(new DaemonCache);
  // The tiers' shares are the namespaces'.
  const OwnerOf owner_of = [](std::string_view stored) { return std::string(split_namespaced_key(stored).ns); };
  TieredCache::Tiers tiers;
  std::shared_ptr<LeaseStore> leases;  // null without Redis: one compile per key in this daemon only
  if (config.memory_bytes > 0) {
    MemoryStore::Options memory;
    memory.max_bytes = config.memory_bytes;
    // Every eighth of the budget evicted (at most 16 MiB): keeps resident
    // memory near the budget for a trim every few dozen large evictions.
    memory.release_memory_every = std::min<uint64_t>(config.memory_bytes / 8, 16ull << 20);
    memory.owner_of = owner_of;
    cache->memory_ = std::make_shared<MemoryStore>(memory);
    tiers.memory = cache->memory_;
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
    options.owner_of = owner_of;
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
  std::shared_ptr<ReapiStore> reapi_recipes;
  if (!config.reapi.endpoint.empty()) {
    ReapiConnection::Options options;
    options.endpoint = config.reapi.endpoint;
    options.instance = config.reapi.instance;
    options.tls_ca_file = config.reapi.tls_ca;
    options.token_file = config.reapi.token_file;
    options.timeout = std::chrono::milliseconds(config.reapi.timeout_ms);
    // Checked when the configuration was read: each one parses.
    for (const std::string& header : config.reapi.headers)
      if (auto parsed = parse_reapi_header(header)) options.headers.push_back(std::move(*parsed));
    Result<std::shared_ptr<ReapiConnection>> connection = ReapiConnection::open(options);
    if (connection) {
      ReapiStore::Options store;
      store.max_queued_bytes = config.reapi.write_queue_bytes;
      if (config.reapi.namespaces == "instance") {
        store.instance_of = [base = config.reapi.instance](std::string_view stored) {
          const std::string_view ns = split_namespaced_key(stored).ns;
          if (ns.empty()) return base;
          return base.empty() ? std::string(ns) : base + "/" + std::string(ns);
        };
      }
      cache->reapi_ = std::make_shared<ReapiStore>(*connection, store);
      tiers.reapi = cache->reapi_;
      // Recipes' index is read, merged and written: written at once, not
      // behind, so the next read sees it.
      store.write_behind = false;
      reapi_recipes = std::make_shared<ReapiStore>(*connection, store);
      spdlog::info("REAPI cache at {} (instance \"{}\", namespaces in the {})", config.reapi.endpoint,
                   config.reapi.instance, config.reapi.namespaces);
    } else {
      spdlog::warn("REAPI cache off: {}", connection.error().message);
    }
  }
  // A Redis or REAPI hit is answered before the disk tier (and Redis, for a
  // REAPI hit) is given its copy: that write would otherwise be most of the
  // hit's time.
  const TieredCache::Options fill_behind{.fill_behind = true};
  cache->tiers_ = std::make_shared<TieredCache>(tiers, fill_behind);
  cache->blob_tiers_ = std::make_shared<TieredCache>(tiers, fill_behind);
  TieredCache::Tiers shared;
  if (tiers.redis) {
    shared.redis = tiers.redis;
  } else if (reapi_recipes) {
    // The fleet's one store: a new node's `kjit warm` finds every recipe.
    shared.reapi = reapi_recipes;
  } else if (cache->disk_) {
    // A directory of their own beside the entries' (whose root is v<N>), so
    // the disk tier's listing, gc and verify never meet a recipe. Recipes
    // hold sources: readable by kjitd's user alone.
    DiskStore::Options options;
    options.directory = (std::filesystem::path(cache->disk_->root()).parent_path() / "recipes").string();
    options.max_bytes = std::max<uint64_t>(config.disk_bytes / 4, 1);
    options.directory_mode = 0700;
    options.entry_mode = [](std::string_view) -> unsigned { return 0600; };
    if (Result<std::unique_ptr<DiskStore>> recipes = DiskStore::open(options); recipes)
      shared.disk = std::shared_ptr<DiskStore>(std::move(recipes.value()));
    else
      spdlog::warn("recipes kept in memory only: {}", recipes.error().message);
  }
  if (!shared.redis && !shared.reapi && !shared.disk) shared.memory = tiers.memory;
  cache->recipe_tiers_ = std::make_shared<TieredCache>(shared);
  CompileCoalescer::Options once;
  once.max_wait = std::chrono::milliseconds(config.lease_wait_ms);
  cache->claims_ = std::make_shared<KeyClaims>(leases, KeyClaims::Options{});
  cache->once_ = std::make_shared<CompileCoalescer>(cache->tiers_, std::move(leases), once);
  return cache;
}

TieredCacheStats DaemonCache::stats() const {
  TieredCacheStats out = tiers_->stats();
  // A full queue of fills is the daemon's, whichever lookup's hit was
  // dropped: an operator sees one count.
  for (const TierStats& blobs : blob_tiers_->stats().tiers)
    for (TierStats& tier : out.tiers)
      if (tier.tier == blobs.tier) tier.fills_dropped += blobs.fills_dropped;
  return out;
}

NamespacedCache DaemonCache::compiles_in(std::string ns) const {
  NamespaceCounters* counters = counters_for(ns);
  return NamespacedCache(tiers_.get(), disk_.get(), once_.get(), std::move(ns), std::nullopt, counters);
}

NamespaceCounters* DaemonCache::counters_for(std::string_view ns) const {
  {
    std::shared_lock lock(counters_mutex_);
    if (auto found = counters_.find(ns); found != counters_.end()) return found->second.get();
  }
  std::unique_lock lock(counters_mutex_);
  std::unique_ptr<NamespaceCounters>& counters = counters_[std::string(ns)];
  if (!counters) counters = std::make_unique<NamespaceCounters>();
  return counters.get();
}

void DaemonCache::set_quotas(std::map<std::string, uint64_t, std::less<>> max_bytes) {
  auto shares = std::make_shared<const StoreShares>(StoreShares{std::move(max_bytes)});
  if (memory_) memory_->set_shares(shares);
  if (disk_) disk_->set_shares(shares);
  shares_.store(std::move(shares));
}

NamespaceStats DaemonCache::stats_of(const std::string& ns, const NamespaceCounters* counters,
                                     const std::map<std::string, OwnerUsage>& memory,
                                     const std::map<std::string, OwnerUsage>& disk, const StoreShares* shares) const {
  NamespaceStats out;
  out.ns = ns;
  if (counters) {
    for (size_t i = 0; i < k_cache_tier_count; ++i) out.hits[i] = counters->hits[i];
    out.misses = counters->misses;
    out.compiles = counters->compiles;
    out.joined = counters->joined;
    out.compile_ms_saved = static_cast<double>(counters->compile_us_saved.load()) / 1000.0;
  }
  if (auto found = memory.find(ns); found != memory.end()) {
    out.memory_bytes = found->second.bytes;
    out.memory_entries = found->second.entries;
    out.memory_evictions = found->second.evictions;
  }
  if (auto found = disk.find(ns); found != disk.end()) {
    out.disk_bytes = found->second.bytes;
    out.disk_entries = found->second.entries;
    out.disk_evictions = found->second.evictions;
  }
  if (shares) out.max_bytes = shares->share_of(ns);
  return out;
}

NamespaceStats DaemonCache::namespace_stats(std::string_view ns) const {
  const std::map<std::string, OwnerUsage> memory = memory_ ? memory_->owner_usage() : std::map<std::string, OwnerUsage>{};
  const std::map<std::string, OwnerUsage> disk = disk_ ? disk_->owner_usage() : std::map<std::string, OwnerUsage>{};
  const std::shared_ptr<const StoreShares> shares = shares_.load();
  return stats_of(std::string(ns), counters_for(ns), memory, disk, shares.get());
}

std::vector<NamespaceStats> DaemonCache::namespace_stats() const {
  const std::map<std::string, OwnerUsage> memory = memory_ ? memory_->owner_usage() : std::map<std::string, OwnerUsage>{};
  const std::map<std::string, OwnerUsage> disk = disk_ ? disk_->owner_usage() : std::map<std::string, OwnerUsage>{};
  const std::shared_ptr<const StoreShares> shares = shares_.load();
  std::set<std::string, std::less<>> names;
  for (const auto& [ns, usage] : memory) names.insert(ns);
  for (const auto& [ns, usage] : disk) names.insert(ns);
  if (shares)
    for (const auto& [ns, bytes] : shares->max_bytes) names.insert(ns);
  std::shared_lock lock(counters_mutex_);
  for (const auto& [ns, counters] : counters_) names.insert(ns);
  std::vector<NamespaceStats> out;
  for (const std::string& ns : names) {
    auto found = counters_.find(ns);
    out.push_back(stats_of(ns, found == counters_.end() ? nullptr : found->second.get(), memory, disk, shares.get()));
  }
  return out;
}

NamespacedCache DaemonCache::blobs_in(std::string ns) const {
  return NamespacedCache(blob_tiers_.get(), disk_.get(), nullptr, std::move(ns));
}

NamespacedCache DaemonCache::local_user_blobs_in(std::string ns) const {
  std::optional<NamesKey> names_key = names_key_for(ns);
  return NamespacedCache(blob_tiers_.get(), disk_.get(), nullptr, std::move(ns), names_key);
}

NamespacedCache DaemonCache::recipes_in(std::string ns) const {
  return NamespacedCache(recipe_tiers_.get(), nullptr, nullptr, std::move(ns));
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
