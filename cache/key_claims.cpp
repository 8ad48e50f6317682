// One holder per key, in this daemon and across the fleet (see key_claims.h).
#include "cache/key_claims.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "cache/lease_renewal.h"
#include "core/hex.h"

namespace kjit {
namespace {

using Clock = std::chrono::steady_clock;

// 128 random bits: a claim id names what its holder may release, so it is
// not one another caller could guess.
std::string new_claim_id() {
  std::random_device random;
  uint32_t words[4];
  for (uint32_t& word : words) word = random();
  return hex_lower(words, sizeof words);
}

}  // namespace

struct HeldClaim::State {
  std::string id, key, scope;
  std::string owner;            // the lease's owner; empty: held in this daemon only
  std::optional<ClaimEnd> end;  // under KeyClaims::mutex_
  std::unique_ptr<LeaseRenewal> renewal;
};

HeldClaim::HeldClaim(KeyClaims& claims, std::shared_ptr<State> state) : claims_(claims), state_(std::move(state)) {}

HeldClaim::~HeldClaim() { claims_.drop(state_); }

const std::string& HeldClaim::id() const { return state_->id; }

bool HeldClaim::fleet() const { return !state_->owner.empty(); }

ClaimEnd HeldClaim::wait_end(const std::function<bool()>& stop, std::chrono::milliseconds poll) {
  std::unique_lock lock(claims_.mutex_);
  for (;;) {
    if (claims_.changed_.wait_for(lock, poll, [&] { return state_->end.has_value(); })) return *state_->end;
    lock.unlock();
    const bool stopping = stop();
    lock.lock();
    if (stopping && !state_->end) state_->end = ClaimEnd::stopped;
    if (state_->end) return *state_->end;
  }
}

// Counts a caller among its key's and its scope's waiters from its first
// wait until claim() returns (the destructor, which runs after claim()'s
// lock is gone).
class KeyClaims::Waiting {
 public:
  Waiting(KeyClaims& claims, const std::string& key, const std::string& scope)
      : claims_(claims), key_(key), scope_(scope) {}

  ~Waiting() {
    if (!entered_) return;
    std::lock_guard lock(claims_.mutex_);
    --claims_.keys_[key_].waiters;
    if (auto it = claims_.scope_waiters_.find(scope_); it != claims_.scope_waiters_.end() && --it->second == 0)
      claims_.scope_waiters_.erase(it);
    claims_.erase_if_idle(key_);
  }

  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

  // With mutex_ held. false, naming the bound in outcome, when one is reached.
  bool enter(const ClaimBounds& bounds, ClaimOutcome& outcome) {
    if (entered_) return true;
    Key& key = claims_.keys_[key_];
    if (key.waiters >= bounds.max_waiters_per_key) {
      outcome.refused_by = ClaimOutcome::Bound::waiters_per_key;
      outcome.bound = bounds.max_waiters_per_key;
      return false;
    }
    auto scope = claims_.scope_waiters_.try_emplace(scope_, 0).first;
    if (scope->second >= bounds.max_waiters_per_scope) {
      if (scope->second == 0) claims_.scope_waiters_.erase(scope);
      outcome.refused_by = ClaimOutcome::Bound::waiters_per_scope;
      outcome.bound = bounds.max_waiters_per_scope;
      return false;
    }
    ++key.waiters;
    ++scope->second;
    ++claims_.waits_;
    entered_ = true;
    outcome.waited = true;
    return true;
  }

 private:
  KeyClaims& claims_;
  const std::string& key_;
  const std::string& scope_;
  bool entered_ = false;
};

KeyClaims::KeyClaims(std::shared_ptr<LeaseStore> leases, Options options)
    : leases_(std::move(leases)), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = default_lease_owner();
  if (options_.lease_renew_interval <= std::chrono::milliseconds::zero())
    options_.lease_renew_interval = std::max(options_.lease_ttl / 3, std::chrono::milliseconds(1));
}

KeyClaims::~KeyClaims() = default;

size_t KeyClaims::held() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

size_t KeyClaims::waiting(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.waiters;
}

void KeyClaims::erase_if_idle(const std::string& key) {
  auto it = keys_.find(key);
  if (it != keys_.end() && !it->second.holder && !it->second.asking && it->second.waiters == 0) keys_.erase(it);
}

ClaimOutcome KeyClaims::claim(const std::string& key, const std::string& scope, std::chrono::milliseconds wait,
                              const ClaimBounds& bounds, const std::function<bool()>& landed,
                              const std::function<bool()>& give_up) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + wait;
  ClaimOutcome outcome;
  auto answer = [&](ClaimAnswer kind) {
    outcome.answer = kind;
    if (outcome.waited)
      outcome.waited_for = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return std::move(outcome);
  };
  if (landed()) return answer(ClaimAnswer::landed);

  Waiting waiting(*this, key, scope);  // before the lock: it leaves after the lock is gone
  std::unique_lock lock(mutex_);
  // The key's version this caller last looked at, kept across the loop so a
  // change made while it was unlocked is not missed.
  std::optional<uint64_t> seen;
  for (;;) {
    // Stable while this caller is counted in it (it is then never erased),
    // and unordered_map never moves its elements.
    Key& state = keys_[key];
    if (state.holder || state.asking) {
      // Another caller here holds the claim, or asks the fleet for it: wait
      // until that changes, then look again.
      if (Clock::now() >= deadline) {
        erase_if_idle(key);
        return answer(ClaimAnswer::timed_out);
      }
      if (!waiting.enter(bounds, outcome)) return answer(ClaimAnswer::refused);
      if (!seen) seen = state.version;
      const bool changed = changed_.wait_until(lock, std::min(deadline, Clock::now() + options_.check_interval),
                                               [&] { return state.version != *seen; });
      seen = state.version;
      lock.unlock();
      if (changed && landed()) return answer(ClaimAnswer::landed);
      const bool gone = !changed && give_up();
      lock.lock();
      if (gone) return answer(ClaimAnswer::timed_out);
      continue;
    }

    // Nobody here holds it or asks for it: this caller asks the fleet, and
    // the others here wait for what it learns.
    if (scope_claims_[scope] >= bounds.max_claims_per_scope) {
      if (scope_claims_[scope] == 0) scope_claims_.erase(scope);
      erase_if_idle(key);
      outcome.refused_by = ClaimOutcome::Bound::claims_per_scope;
      outcome.bound = bounds.max_claims_per_scope;
      return answer(ClaimAnswer::refused);
    }
    state.asking = true;
    seen = state.version;
    lock.unlock();
    const std::string id = new_claim_id();
    const std::string owner = options_.owner + ":" + id;
    const LeaseOutcome lease =
        leases_ ? leases_->try_acquire(key, owner, options_.lease_ttl) : LeaseOutcome::unavailable;
    if (leases_) note_store(lease != LeaseOutcome::unavailable);

    if (lease == LeaseOutcome::held_by_other) {
      // Another daemon holds it: watch its lease on behalf of every waiter here.
      Watched watched = Watched::timed_out;
      lock.lock();
      const bool may_wait = Clock::now() < deadline && waiting.enter(bounds, outcome);
      lock.unlock();
      if (may_wait) watched = watch_fleet(key, *seen, deadline, give_up);
      lock.lock();
      state.asking = false;
      ++state.version;
      changed_.notify_all();  // one of the waiters here asks next
      if (watched == Watched::timed_out || outcome.refused_by != ClaimOutcome::Bound::none) {
        erase_if_idle(key);
        return answer(outcome.refused_by != ClaimOutcome::Bound::none ? ClaimAnswer::refused : ClaimAnswer::timed_out);
      }
      lock.unlock();
      const bool there = landed();
      lock.lock();
      if (there) return answer(ClaimAnswer::landed);
      continue;  // released without its result, lapsed, or the store failed: ask again
    }

    // Acquired, or no fleet to ask (none, or unreachable): this caller holds
    // it, unless a holder that ended since the first look left the result.
    if (landed()) {
      if (lease == LeaseOutcome::acquired) (void)leases_->release(key, owner);
      lock.lock();
      state.asking = false;
      ++state.version;
      changed_.notify_all();
      return answer(ClaimAnswer::landed);
    }
    auto held = std::make_shared<HeldClaim::State>();
    held->id = id;
    held->key = key;
    held->scope = scope;
    if (lease == LeaseOutcome::acquired) {
      held->owner = owner;
      held->renewal = std::make_unique<LeaseRenewal>(*leases_, key, owner, options_.lease_ttl,
                                                     options_.lease_renew_interval, "claim");
    }
    lock.lock();
    state.asking = false;
    state.holder = held;
    held_.emplace(id, held);
    ++scope_claims_[scope];
    outcome.claim.reset(new HeldClaim(*this, std::move(held)));
    return answer(ClaimAnswer::claimed);
  }
}

KeyClaims::Watched KeyClaims::watch_fleet(const std::string& key, uint64_t seen, Clock::time_point deadline,
                                          const std::function<bool()>& give_up) {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      Key& state = keys_[key];  // counted in: never erased meanwhile
      // A put here (fulfil) ends the wait at once.
      if (changed_.wait_until(lock, std::min(deadline, Clock::now() + options_.poll_interval),
                              [&] { return state.version != seen; }))
        return Watched::changed;
    }
    if (Clock::now() >= deadline || give_up()) return Watched::timed_out;
    Result<std::optional<std::string>> holder = leases_->holder(key);
    if (!holder) {
      note_store(false);
      return Watched::store_failed;
    }
    if (!holder->has_value()) return Watched::gone;
  }
}

void KeyClaims::note_store(bool reachable) {
  std::lock_guard lock(mutex_);
  if (reachable != store_down_) return;
  store_down_ = !reachable;
  if (store_down_)
    spdlog::warn("claims: the lease store cannot be reached; blob claims hold in this daemon only until it answers");
  else
    spdlog::info("claims: the lease store answers again; blob claims hold across the daemons sharing it");
}

void KeyClaims::fulfil(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    ++it->second.version;
    if (it->second.holder && !it->second.holder->end) it->second.holder->end = ClaimEnd::fulfilled;
  }
  changed_.notify_all();
}

bool KeyClaims::release(const std::string& id, const std::string& scope, bool failed) {
  {
    std::lock_guard lock(mutex_);
    auto it = held_.find(id);
    if (it == held_.end() || it->second->scope != scope || it->second->end) return false;
    it->second->end = failed ? ClaimEnd::failed : ClaimEnd::released;
  }
  changed_.notify_all();
  return true;
}

void KeyClaims::drop(const std::shared_ptr<HeldClaim::State>& state) {
  // The lease first, so that a waiter woken below can take it at once.
  state->renewal.reset();
  if (!state->owner.empty())
    if (Status released = leases_->release(state->key, state->owner); !released)
      spdlog::debug("claims: lease on {} not released ({}); it expires by itself", state->key,
                    released.error().message);
  {
    std::lock_guard lock(mutex_);
    held_.erase(state->id);
    if (auto it = scope_claims_.find(state->scope); it != scope_claims_.end() && --it->second == 0)
      scope_claims_.erase(it);
    if (auto it = keys_.find(state->key); it != keys_.end()) {
      if (it->second.holder == state) it->second.holder.reset();
      ++it->second.version;
      erase_if_idle(state->key);
    }
  }
  changed_.notify_all();
}

}  // namespace kjit
