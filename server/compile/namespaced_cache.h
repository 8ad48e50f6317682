// A caller's view of the daemon's cache, bound to one cache namespace. The
// services reach cache entries only through such a view (DaemonCache keeps
// its stores private), so no call site can forget whose entries it touches:
// every key a view is given is the caller's own, and a view never sees or
// changes another namespace's entries.
//
// Stored keys: an entry of namespace `ns` lives in every tier under
// "<key>-n-<ns>", the bare key in the default namespace (""), so no
// namespace's entry can be found under another's key, and a listing can tell
// whose an entry is. The blobs of a user on the daemon's host carry a tag
// that only that user can compute, "<key>-c<tag>-n-<ns>" (blob_file_names.h),
// which makes their files readable by that user alone.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/compile_coalescer.h"
#include "cache/disk_store.h"
#include "cache/tiered_cache.h"
#include "kjit/status.h"
#include "server/compile/blob_file_names.h"
#include "server/compile/namespace_counters.h"

namespace kjit {

// The key an entry of namespace ns is stored under in every tier; with a
// names key, tagged with it.
std::string namespaced_key(std::string_view key, std::string_view ns, const NamesKey* names_key = nullptr);

// The namespace and the bare key of a stored key (without its tag); the
// default namespace for keys without the marker.
struct NamespacedKey {
  std::string_view ns;
  std::string_view key;
  bool tagged = false;  // named with a namespace's names key
};
NamespacedKey split_namespaced_key(std::string_view stored);

class NamespacedCache {
 public:
  const std::string& ns() const { return ns_; }
  // What key is stored under: for a caller that must name the same flight
  // of a compile as the cache does.
  std::string stored_key(std::string_view key) const {
    return namespaced_key(key, ns_, names_key_ ? &*names_key_ : nullptr);
  }

  std::optional<CacheHit> get(std::string_view key) const;
  // The memory tier alone (TieredCache::get_from_memory): never blocks on I/O.
  std::optional<CacheHit> get_from_memory(std::string_view key) const;
  // entry.key is the bare key; it is stored under this namespace's.
  std::shared_ptr<const CacheEntry> put(CacheEntry entry) const;
  void remove(std::string_view key) const;

  // The entry for key, or one compile per key across every caller of this
  // namespace (CompileCoalescer). The compiled entry is stored under this
  // namespace's key. INTERNAL on a view that compiles nothing (blobs).
  Result<CacheOutcome> get_or_compile(std::string_view key, const CompileCoalescer::Compile& compile) const;

  // The disk tier: null-safe questions, then this namespace's share of it.
  bool has_disk() const { return disk_ != nullptr; }
  // This namespace's entries on disk, under their bare keys.
  Result<std::vector<StoredKey>> list() const;
  // What the entry under key on disk is, when it is a client blob or group
  // (DiskStore::read_head: its header alone, nothing counted or touched).
  Result<std::optional<BlobIdentity>> blob_on_disk(std::string_view key) const;
  // Collects this namespace's entries down to max_bytes of its own.
  Result<DiskStore::GcReport> gc(uint64_t max_bytes) const;

 private:
  friend class DaemonCache;
  // The stores are the DaemonCache's, which outlives every request and so
  // every view; raw pointers keep a view cheap on the memory-hit path.
  NamespacedCache(TieredCache* tiers, DiskStore* disk, CompileCoalescer* once, std::string ns,
                  std::optional<NamesKey> names_key = std::nullopt, NamespaceCounters* counters = nullptr)
      : tiers_(tiers), disk_(disk), once_(once), ns_(std::move(ns)), names_key_(names_key), counters_(counters) {}

  TieredCache* tiers_;
  DiskStore* disk_;        // null when the disk tier is off
  CompileCoalescer* once_;  // null for a view that compiles nothing
  std::string ns_;
  std::optional<NamesKey> names_key_;  // a local user's blobs: their keys are tagged
  NamespaceCounters* counters_;        // the namespace's compile lookups; null for views that count none
};

}  // namespace kjit
