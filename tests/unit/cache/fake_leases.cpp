// Leases in a map with steady-clock expiry (see fake_leases.h).
#include "fake_leases.h"

namespace kjit::test {
namespace {

Error unreachable() {
  return make_error(ErrorCode::unavailable, "fake lease store is unreachable");
}

}  // namespace

FakeLeases::Lease* FakeLeases::live(std::string_view key) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return nullptr;
  if (Clock::now() < it->second.expires) return &it->second;
  leases_.erase(it);
  return nullptr;
}

bool FakeLeases::reachable_by(std::string_view owner) const {
  return available_ && (cut_off_.empty() || !owner.starts_with(cut_off_));
}

LeaseOutcome FakeLeases::try_acquire(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) {
  std::lock_guard lock(mutex_);
  if (!reachable_by(owner)) return LeaseOutcome::unavailable;
  if (live(key)) return LeaseOutcome::held_by_other;
  leases_.insert_or_assign(std::string(key), Lease{std::string(owner), Clock::now() + ttl});
  return LeaseOutcome::acquired;
}

Status FakeLeases::renew(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) {
  std::lock_guard lock(mutex_);
  if (!reachable_by(owner)) return unreachable();
  Lease* lease = live(key);
  if (!lease || lease->owner != owner)
    return make_error(ErrorCode::not_found, "lease on " + std::string(key) + " is not held by " + std::string(owner));
  lease->expires = Clock::now() + ttl;
  ++renewals_[std::string(key)];
  return Ok{};
}

Status FakeLeases::release(std::string_view key, std::string_view owner) {
  std::lock_guard lock(mutex_);
  if (!reachable_by(owner)) return unreachable();
  if (Lease* lease = live(key); lease && lease->owner == owner) leases_.erase(leases_.find(key));
  return Ok{};
}

Result<std::optional<std::string>> FakeLeases::holder(std::string_view key) {
  std::lock_guard lock(mutex_);
  if (!available_) return unreachable();
  Lease* lease = live(key);
  return lease ? std::optional<std::string>(lease->owner) : std::nullopt;
}

void FakeLeases::set_available(bool available) {
  std::lock_guard lock(mutex_);
  available_ = available;
}

void FakeLeases::cut_off(std::string owner_prefix) {
  std::lock_guard lock(mutex_);
  cut_off_ = std::move(owner_prefix);
}

int FakeLeases::renewals(std::string_view key) const {
  std::lock_guard lock(mutex_);
  auto it = renewals_.find(key);
  return it == renewals_.end() ? 0 : it->second;
}

}  // namespace kjit::test
