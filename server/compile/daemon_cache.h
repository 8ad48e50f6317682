// The daemon's cache, assembled from its configuration: the memory, disk,
// Redis and REAPI tiers, and the coalescer that lets one compile per key run across
// requests and daemons.
//
// Its stores are private: callers reach entries through a NamespacedCache
// bound to one namespace, or, for what spans every namespace (verify, a
// whole-tier gc, the counters), through the few methods here.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cache/compile_coalescer.h"
#include "cache/disk_store.h"
#include "cache/key_claims.h"
#include "cache/redis_store.h"
#include "cache/tiered_cache.h"
#include "server/compile/blob_file_names.h"
#include "server/compile/namespace_counters.h"
#include "server/compile/namespaced_cache.h"
#include "server/config/daemon_config.h"

namespace kjit {

class ReapiStore;

class DaemonCache {
 public:
  // Null when the cache is turned off. A tier that cannot be opened (an
  // unwritable directory) is logged and left out, never fatal.
  static std::shared_ptr<DaemonCache> open(const CacheConfig& config);

  // Compile entries of namespace ns.
  NamespacedCache compiles_in(std::string ns) const;
  // Client blobs of namespace ns: the same stores, counted apart from
  // compiles, so blob lookups never show in the compile lookup and miss
  // counts.
  NamespacedCache blobs_in(std::string ns) const;
  // The blobs of a user on the daemon's host (its own namespace, or one it
  // shares by declaration): as blobs_in, stored under keys tagged with the
  // namespace's names key where the disk tier has a secret, so that only
  // that namespace's users can name, and read, their files.
  NamespacedCache local_user_blobs_in(std::string ns) const;
  // Recipes of namespace ns (recipe_book.h): in the most shared tier alone
  // (Redis; else a disk store of their own, `recipes/` beside the disk
  // tier's entries, at most a quarter of disk_bytes; else memory), so
  // daemons sharing Redis read one index, never a stale copy from a tier
  // above it, and the disk tier's listing and gc never meet a recipe.
  NamespacedCache recipes_in(std::string ns) const;
  // The names key of namespace ns, for its users' direct reads, and which
  // secret it derives from; none without a disk tier (or its secret).
  std::optional<NamesKey> names_key_for(std::string_view ns) const;
  std::string names_secret_id() const { return names_secret_ ? names_secret_->id() : std::string(); }

  // Claims on client blobs (one compile per group for clients compiling
  // for themselves), over the same leases as compiles.
  std::shared_ptr<KeyClaims> blob_claims() const { return claims_; }

  // The compile lookups' counters; fills dropped count client blobs' too.
  TieredCacheStats stats() const;
  // Each namespace's lookups (its compile views') and what it holds in the
  // memory and disk tiers (compile entries and blobs), with its share.
  std::vector<NamespaceStats> namespace_stats() const;
  // One namespace's; its figures are zero when it has done nothing yet.
  NamespaceStats namespace_stats(std::string_view ns) const;
  // Each namespace's share of the memory and disk tiers (the tenants'
  // max_bytes), from the next put on; namespaces not named have none.
  void set_quotas(std::map<std::string, uint64_t, std::less<>> max_bytes);
  CoalescerStats coalescer_stats() const { return once_->stats(); }
  // The REAPI tier, when it is on: its bytes moved and its queue, and a
  // flush for tests and shutdown.
  ReapiStore* reapi() const { return reapi_.get(); }
  // Whether compiles of one key are one across daemons (Redis leases), or
  // across this daemon's requests only.
  bool shares_leases() const { return redis_ != nullptr; }

  // The disk tier across every namespace: for the local operator only.
  bool has_disk() const { return disk_ != nullptr; }
  Result<DiskStore::VerifyReport> verify_disk() const;
  Result<DiskStore::GcReport> gc_disk(uint64_t max_bytes) const;
  // Where direct readers find the disk tier, when it is on.
  struct DiskLayout {
    std::string root;
    std::chrono::milliseconds touch_interval;
  };
  std::optional<DiskLayout> disk_layout() const;

 private:
  DaemonCache() = default;  // open() builds it, every store in place
  // Made at a namespace's first compile view, never removed: the compile
  // namespaces are the tenants' and the default one.
  NamespaceCounters* counters_for(std::string_view ns) const;
  NamespaceStats stats_of(const std::string& ns, const NamespaceCounters* counters,
                          const std::map<std::string, OwnerUsage>& memory,
                          const std::map<std::string, OwnerUsage>& disk, const StoreShares* shares) const;

  std::shared_ptr<TieredCache> tiers_;
  std::shared_ptr<TieredCache> blob_tiers_;  // the same stores, with counters of their own
  std::shared_ptr<TieredCache> recipe_tiers_;  // the most shared of them
  std::shared_ptr<MemoryStore> memory_;      // null when the memory tier is off
  std::shared_ptr<DiskStore> disk_;          // null when the disk tier is off
  std::shared_ptr<RedisStore> redis_;        // null when the Redis tier is off
  std::shared_ptr<ReapiStore> reapi_;        // null when the REAPI tier is off
  std::shared_ptr<CompileCoalescer> once_;
  std::shared_ptr<KeyClaims> claims_;
  std::optional<BlobNameSecret> names_secret_;  // with the disk tier
  mutable std::shared_mutex counters_mutex_;
  mutable std::map<std::string, std::unique_ptr<NamespaceCounters>, std::less<>> counters_;
  std::atomic<std::shared_ptr<const StoreShares>> shares_;
};

// DaemonCache::open, by its older name.
inline std::shared_ptr<DaemonCache> open_daemon_cache(const CacheConfig& config) { return DaemonCache::open(config); }

}  // namespace kjit
