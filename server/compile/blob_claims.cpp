// Claims on blob groups over KeyClaims (see blob_claims.h).
#include "server/compile/blob_claims.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/compile/blob_store.h"

namespace kjit {
namespace {

// One claim key per group and caller's namespace, the same in every daemon
// (the bare namespace, not a view's tagged spelling, which is a disk tier's
// own): blob keys end in "-blob", so none is ever a compile's lease key.
std::string claim_key(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                      std::string_view group) {
  return namespaced_key(blob_cache_key(k_blob_group_kind, ns, key, group), blobs.ns());
}

bool is_claim_id(std::string_view id) {
  return id.size() == 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Error refusal(const ClaimOutcome& outcome) {
  std::string what;
  switch (outcome.refused_by) {
    case ClaimOutcome::Bound::waiters_per_key:
      what = "callers already wait for this group's claim ([limits] max_claim_waiters_per_key)";
      break;
    case ClaimOutcome::Bound::waiters_per_scope:
      what = "callers of this cache namespace already wait for claims ([limits] max_claim_waiters_per_namespace)";
      break;
    case ClaimOutcome::Bound::claims_per_scope:
    case ClaimOutcome::Bound::none:
      what = "claims are held in this cache namespace already ([limits] max_claims_per_namespace)";
      break;
  }
  return make_error(ErrorCode::resource_exhausted,
                    std::to_string(outcome.bound) + " " + what + "; compile without a claim");
}

}  // namespace

BlobClaims::BlobClaims(std::shared_ptr<KeyClaims> claims, BlobClaimLimits limits)
    : claims_(std::move(claims)), limits_(limits) {}

BlobClaims::~BlobClaims() = default;

Result<BlobGroupClaim> BlobClaims::claim_group(BlobStore& store, const NamespacedCache& blobs, std::string_view ns,
                                               std::string_view key, std::string_view group,
                                               std::chrono::milliseconds wait, const std::function<bool()>& give_up) {
  if (wait > limits_.max_wait)
    return make_error(ErrorCode::invalid_argument, "wait_ms " + std::to_string(wait.count()) +
                                                       " is over the limit of " +
                                                       std::to_string(limits_.max_wait.count()) +
                                                       " ([limits] max_claim_wait_ms)");
  // The fields as GetBlobGroup checks them, with its messages.
  Result<BlobGroupAnswer> first = store.get_group(blobs, ns, key, group);
  if (!first) return first.error();
  BlobGroupClaim out;
  // A group missing a member (evicted) is not there: the compile that
  // follows puts the member again.
  auto whole = [](const BlobGroupAnswer& answer) { return answer.found && answer.missing.empty(); };
  if (whole(*first)) {
    ++hits_;
    out.answer = ClaimAnswer::landed;
    out.group = std::make_unique<BlobGroupAnswer>(std::move(*first));
    return out;
  }
  std::unique_ptr<BlobGroupAnswer> seen;
  auto landed = [&] {
    Result<BlobGroupAnswer> now = store.get_group(blobs, ns, key, group);
    if (!now || !whole(*now)) return false;
    seen = std::make_unique<BlobGroupAnswer>(std::move(*now));
    return true;
  };
  bool looked = false;  // the first look above stands for claim()'s own first one
  ClaimOutcome outcome = claims_->claim(
      claim_key(blobs, ns, key, group), blobs.ns(), wait, limits_.bounds,
      [&] { return std::exchange(looked, true) ? landed() : false; }, give_up);
  if (outcome.waited) wait_ms_ += static_cast<uint64_t>(outcome.waited_for.count());
  out.answer = outcome.answer;
  switch (outcome.answer) {
    case ClaimAnswer::landed:
      ++hits_;
      out.group = std::move(seen);
      break;
    case ClaimAnswer::claimed:
      ++claims_granted_;
      out.claim = std::move(outcome.claim);
      break;
    case ClaimAnswer::timed_out:
      ++timeouts_;
      break;
    case ClaimAnswer::refused:
      ++refused_;
      return refusal(outcome);
  }
  return out;
}

ClaimEnd BlobClaims::hold(HeldClaim& claim, const std::function<bool()>& stop) {
  const ClaimEnd end = claim.wait_end(stop, std::chrono::milliseconds(100));
  if (end != ClaimEnd::fulfilled) ++abandoned_;
  return end;
}

Result<bool> BlobClaims::release(const NamespacedCache& blobs, std::string_view id, bool failed) {
  if (!is_claim_id(id))
    return make_error(ErrorCode::invalid_argument, "claim_id '" + std::string(id.substr(0, 64)) +
                                                       "' is not a claim id (32 hex digits, as ClaimBlobGroup gave)");
  return claims_->release(std::string(id), blobs.ns(), failed);
}

void BlobClaims::fulfil(const NamespacedCache& blobs, std::string_view ns, std::string_view key,
                        std::string_view group) {
  claims_->fulfil(claim_key(blobs, ns, key, group));
}

void BlobClaims::add_counts(BlobStats& stats) const {
  stats.claims = claims_granted_;
  stats.claim_hits = hits_;
  stats.claim_waits = claims_->waits();
  stats.claim_wait_ms = wait_ms_;
  stats.claim_timeouts = timeouts_;
  stats.claims_abandoned = abandoned_;
  stats.claims_refused = refused_;
}

}  // namespace kjit
