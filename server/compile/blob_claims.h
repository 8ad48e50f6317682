// Claims on blob groups: one compile per group for clients that compile for
// themselves (Triton, cuda.core), as CompileCoalescer gives the compiles
// kjitd runs. A caller that misses a group takes its claim and compiles;
// every other caller asking for the same group waits, at most as long as it
// says, until the group is put (and gets it), or the claim is given up (and
// one of them takes it).
//
// A claim is on (the caller's blob namespace, namespace, key, group): the
// caller's view decides whose claim it is, as it decides whose blobs. The
// claims themselves are KeyClaims (cache/key_claims.h): a table here, and a
// lease across the daemons sharing Redis. A put of the group by anyone
// fulfils the claim; claims never make a put or a get fail.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "cache/blob_stats.h"
#include "cache/key_claims.h"
#include "kjit/status.h"
#include "server/compile/namespaced_cache.h"

namespace kjit {

class BlobStore;
struct BlobGroupAnswer;

// What the configuration allows ([limits] max_claim_*).
struct BlobClaimLimits {
  std::chrono::milliseconds max_wait{3'600'000};
  ClaimBounds bounds;
};

struct BlobGroupClaim {
  ClaimAnswer answer = ClaimAnswer::timed_out;  // never refused: that is an Error
  std::unique_ptr<BlobGroupAnswer> group;       // landed: the group, whole
  std::unique_ptr<HeldClaim> claim;             // claimed
};

class BlobClaims {
 public:
  BlobClaims(std::shared_ptr<KeyClaims> claims, BlobClaimLimits limits);
  ~BlobClaims();

  // The group if it is there whole, else its claim, waiting at most `wait`
  // while another caller holds it. INVALID_ARGUMENT for a field the blob
  // calls refuse or a wait over max_wait; RESOURCE_EXHAUSTED over a bound.
  // give_up() says the caller has gone (checked while waiting).
  Result<BlobGroupClaim> claim_group(BlobStore& store, const NamespacedCache& blobs, std::string_view ns,
                                     std::string_view key, std::string_view group, std::chrono::milliseconds wait,
                                     const std::function<bool()>& give_up);
  // Blocks while claim is held (see HeldClaim::wait_end) and counts an end
  // without the group as abandoned. The claim is released when it is destroyed.
  ClaimEnd hold(HeldClaim& claim, const std::function<bool()>& stop);
  // Ends the caller's claim `id`; false when it had ended (or is not the
  // caller's). INVALID_ARGUMENT for an id that no claim could have.
  Result<bool> release(const NamespacedCache& blobs, std::string_view id, bool failed);
  // The group was put: its claim ends, its waiters get it.
  void fulfil(const NamespacedCache& blobs, std::string_view ns, std::string_view key, std::string_view group);

  // How long a claim outlives a daemon that died holding it.
  std::chrono::milliseconds lease_ttl() const { return claims_->lease_ttl(); }
  void add_counts(BlobStats& stats) const;

 private:
  std::shared_ptr<KeyClaims> claims_;
  BlobClaimLimits limits_;
  // claim_waits is KeyClaims' own count, taken as waits begin.
  std::atomic<uint64_t> claims_granted_{0}, hits_{0}, wait_ms_{0}, timeouts_{0}, abandoned_{0}, refused_{0};
};

}  // namespace kjit
