// Client blobs: opaque bytes a client (Triton's cache manager, say) stores
// and fetches by (namespace, key, name) through the daemon's cache tiers.
//
// Keys: SHA-256 over a domain-separated, length-prefixed spelling of
// (kind, namespace, key, name), in hex, followed by "-blob". Compile keys are
// exactly 64 lowercase hex digits (check_key_spelling), so no blob key is
// ever a compile key: the RPCs that take a compile key refuse it, and a
// compile lookup never meets a blob. Every read also checks the entry's
// recorded identity, so an entry of the other kind (or, against all odds, of
// another blob) under the same key is a miss.
//
// Storage: a NamespacedCache of blobs (DaemonCache::blobs_in), bound to the
// caller's namespace, so no caller reads or replaces another namespace's
// blobs, and blob lookups never show in the compile counts.
//
// A plain put: the first writer wins. A put whose identity already holds a
// valid entry in the caller's namespace leaves it there (and counts
// put_conflicts when the bytes differ), so Triton's and cuTile's processes,
// which put what one compile of a key made, never mix two compiles' files.
// Two first puts at once both store; the later one stays.
//
// A put asking to replace (a program cache's `cache[key] = value`) stores
// its bytes over other ones: one put to every tier, each of which swaps the
// entry whole (the memory tier under its shard's lock, the disk tier by
// rename, Redis by SET), so a reader gets the old bytes or the new. In a
// namespace a [[blob_sharing]] entry shares, it is refused instead
// (FAILED_PRECONDITION, counted in put_conflicts): nothing about the writer
// is recorded (the entry format is the direct readers' protocol), so the
// daemon cannot tell a member's own blob from one another member loads, and
// a shared blob keeps its first writer's bytes until a member removes it on
// purpose (kjit cache rm). Groups are never replaced: a found group lists
// members that belong together.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/blob_stats.h"
#include "cache/cache_source.h"
#include "cache/tiered_cache.h"
#include "pipeline/blob_key.h"
#include "server/compile/blob_claims.h"
#include "server/compile/namespaced_cache.h"
#include "kjit/status.h"

namespace kjit {

// Bounds on what a client names: a name is a file name on the client's side.
inline constexpr size_t k_max_blob_field_bytes = 256;
inline constexpr size_t k_max_blob_group_names = 1024;

// INVALID_ARGUMENT naming `field` unless value is 1..256 bytes without NUL;
// a name (or group) also has no '/', no control character, no "..", and is
// not ".".
Status check_blob_field(std::string_view field, std::string_view value, bool is_file_name);


struct BlobHit {
  std::shared_ptr<const CacheEntry> entry;  // entry->artifact.bytes is the blob
  CacheTier tier;
};

// What a put did: the first writer wins, and a later one is told, unless
// it asked to replace.
struct BlobPutOutcome {
  std::string cache_key;        // where it is stored, as kjit cache ls shows it
  bool already_stored = false;  // the identity held a valid entry: left in place
  bool conflict = false;        // ... whose bytes differ from this put's (counted in put_conflicts)
  bool replaced = false;        // the identity held other bytes, and this put's took their place
};

// How a put meets a stored blob of its identity.
struct BlobPutMode {
  bool replace = false;           // store over other bytes (else the first writer wins)
  bool shared_namespace = false;  // the caller's namespace is a [[blob_sharing]] one: replace is refused
};

struct BlobGroupAnswer {
  bool found = false;  // the group itself
  std::vector<std::pair<std::string, BlobHit>> members;
  std::vector<std::string> missing;
  std::vector<std::string> deferred;  // found, over the answer's byte budget
};

class BlobStore {
 public:
  // claims null: ClaimBlobGroup is refused (no claims without a cache).
  explicit BlobStore(uint64_t max_blob_bytes, std::shared_ptr<KeyClaims> claims = nullptr,
                     BlobClaimLimits claim_limits = {});
  ~BlobStore();

  // Fields are validated here, so every caller gets the same errors.
  // `blobs` is the caller's view of the blob entries: its namespace, not
  // `ns` (the client's own grouping), decides whose blobs these are.
  Result<BlobPutOutcome> put(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                             std::string_view name, std::string data, BlobPutMode mode = {});
  Result<std::optional<BlobHit>> get(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                                     std::string_view name);
  Result<BlobPutOutcome> put_group(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                                   std::string_view group, const std::vector<std::string>& names);
  // Members are returned while their sum stays within max_blob_bytes (the
  // first always), so an answer is never much larger than one PutBlob.
  Result<BlobGroupAnswer> get_group(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                                    std::string_view group);

  BlobStats stats() const;
  // Claims on groups (blob_claims.h); null without claims. A put_group fulfils its group's claim.
  BlobClaims* claims() const { return claims_.get(); }

 private:
  std::optional<BlobHit> lookup(const NamespacedCache& blobs, const BlobIdentity& identity);
  // Stores entry unless a valid entry of the same identity is there: then
  // the first stays, and other bytes count as a conflict; with
  // mode.replace, other bytes are replaced (or, shared, refused).
  Result<BlobPutOutcome> store(const NamespacedCache& blobs, CacheEntry entry, BlobPutMode mode);
  Status check_identity(std::string_view ns, std::string_view key, std::string_view name) const;

  uint64_t max_blob_bytes_;
  std::atomic<uint64_t> puts_{0}, put_bytes_{0}, gets_{0}, hits_{0}, misses_{0};
  std::atomic<uint64_t> groups_put_{0}, group_gets_{0}, group_hits_{0};
  std::atomic<uint64_t> put_conflicts_{0};
  std::unique_ptr<BlobClaims> claims_;
};

}  // namespace kjit
