// Claims: one holder per key for work done outside the daemon (a client
// that compiles for itself), while the other callers asking for the same key
// wait for its result instead of doing the same work.
//
// In this daemon a claim is an entry of a table; across the daemons sharing
// a LeaseStore (Redis in a fleet) it is also a lease, the same kind of lease
// compiles take (CompileCoalescer), renewed while the claim is held, so a
// daemon that dies keeps others out for at most the lease's TTL. When the
// store cannot be asked, claims hold in this daemon only (logged once).
//
// Keys are opaque. What "the result has landed" means is the caller's (the
// `landed` callback of claim(), and fulfil()), and so is what ends a claim
// besides: its holder going away (HeldClaim::wait_end's stop) or releasing it.
// Nobody waits past the bound it gives, and how many may wait is bounded.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "cache/lease_store.h"
#include "kjit/status.h"

namespace kjit {

class KeyClaims;

// Why a held claim ended.
enum class ClaimEnd {
  fulfilled,  // fulfil(key): its result landed
  released,   // released by its holder, its result not (yet) stored
  failed,     // released by its holder, which reported that its work failed
  stopped,    // the holder's stop() said so: its caller went away, the daemon drains
};

// A claim this daemon holds for one caller. Destroying it releases the
// claim: its lease is dropped, and the key's waiters here look again.
class HeldClaim {
 public:
  ~HeldClaim();
  HeldClaim(const HeldClaim&) = delete;
  HeldClaim& operator=(const HeldClaim&) = delete;

  // 32 hex digits, unguessable: what KeyClaims::release takes.
  const std::string& id() const;
  // Held across the daemons sharing the lease store; false: in this daemon only.
  bool fleet() const;
  // Blocks until the claim ends: fulfil() or release(), or stop() returning
  // true, which is asked every poll.
  ClaimEnd wait_end(const std::function<bool()>& stop, std::chrono::milliseconds poll);

  struct State;  // key_claims.cpp

 private:
  friend class KeyClaims;
  HeldClaim(KeyClaims& claims, std::shared_ptr<State> state);

  KeyClaims& claims_;
  std::shared_ptr<State> state_;
};

// How many callers may wait for claims: on one key, and in one scope (the
// callers' namespace), and how many claims one scope may hold.
struct ClaimBounds {
  size_t max_waiters_per_key = 64;
  size_t max_waiters_per_scope = 1024;
  size_t max_claims_per_scope = 1024;
};

enum class ClaimAnswer {
  landed,     // the result is there (landed() said so): nothing to do
  claimed,    // the caller holds the claim: it does the work
  timed_out,  // another caller held the claim for the whole wait
  refused,    // over a bound of ClaimBounds (refused_by names it)
};

struct ClaimOutcome {
  ClaimAnswer answer = ClaimAnswer::timed_out;
  std::unique_ptr<HeldClaim> claim;  // with claimed
  // Another caller held the claim when this one asked, and this one waited.
  bool waited = false;
  std::chrono::milliseconds waited_for{0};
  enum class Bound { none, waiters_per_key, waiters_per_scope, claims_per_scope } refused_by = Bound::none;
  size_t bound = 0;  // the bound's value, with refused
};

class KeyClaims {
 public:
  struct Options {
    // How long a claim's lease outlives a daemon that stopped renewing it
    // (it died): the holder's daemon renews it while the claim is held, so
    // this only bounds how long a dead daemon keeps the others waiting.
    std::chrono::milliseconds lease_ttl{5'000};
    // How often a held lease is extended back to lease_ttl; 0 picks
    // lease_ttl / 3, so one failed renewal still leaves it alive.
    std::chrono::milliseconds lease_renew_interval{0};
    // How often a waiter here asks whether another daemon's lease is gone.
    std::chrono::milliseconds poll_interval{50};
    // How often a waiter asks give_up(), and a holder stop().
    std::chrono::milliseconds check_interval{100};
    std::string owner{};  // lease owner prefix; empty picks "<host>:<pid>:<random>"
  };

  // leases may be null (no fleet): claims then hold in this daemon only.
  KeyClaims(std::shared_ptr<LeaseStore> leases, Options options);
  ~KeyClaims();

  // The claim on key for a caller in scope, waiting at most `wait` while
  // another caller holds it. landed() (called without any lock held, often:
  // first, and whenever the key's claim changes) says whether the result is
  // there; give_up() whether the caller has gone (checked while waiting).
  ClaimOutcome claim(const std::string& key, const std::string& scope, std::chrono::milliseconds wait,
                     const ClaimBounds& bounds, const std::function<bool()>& landed,
                     const std::function<bool()>& give_up);

  // The result for key has landed: the claim on it here ends as fulfilled,
  // and the callers waiting here look again.
  void fulfil(const std::string& key);

  // Ends the claim `id` held in scope (failed: its holder's work failed).
  // false when no such claim is held in scope: it ended already, or is not
  // that scope's.
  bool release(const std::string& id, const std::string& scope, bool failed);

  std::chrono::milliseconds lease_ttl() const { return options_.lease_ttl; }
  // Claims held in this daemon now; callers here waiting for key's claim.
  size_t held() const;
  size_t waiting(const std::string& key) const;
  // Callers that began to wait for another caller's claim, since the start
  // (counted as they begin, so a test or a scrape sees a wait in progress).
  uint64_t waits() const { return waits_; }

 private:
  friend class HeldClaim;
  // What this daemon knows of one key's claim.
  struct Key {
    std::shared_ptr<HeldClaim::State> holder;  // a claim held here
    bool asking = false;   // a caller here asks the lease store, or watches another daemon's lease
    size_t waiters = 0;    // callers here waiting for the claim
    uint64_t version = 0;  // changes whenever the claim does, so waiters can tell
  };
  class Waiting;
  enum class Watched { changed, gone, timed_out, store_failed };

  // Waits while another daemon's lease on key lives: until it is gone, the
  // key's version moves past seen (a put here), or the deadline.
  Watched watch_fleet(const std::string& key, uint64_t seen, std::chrono::steady_clock::time_point deadline,
                      const std::function<bool()>& give_up);
  // Whether the store answered; logs when that changes.
  void note_store(bool reachable);
  void drop(const std::shared_ptr<HeldClaim::State>& state);
  void erase_if_idle(const std::string& key);  // with mutex_ held

  std::shared_ptr<LeaseStore> leases_;
  Options options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // any key's claim changed
  std::unordered_map<std::string, Key> keys_;
  std::unordered_map<std::string, std::shared_ptr<HeldClaim::State>> held_;  // by id
  std::unordered_map<std::string, size_t> scope_waiters_, scope_claims_;
  bool store_down_ = false;  // under mutex_: logged once per outage
  std::atomic<uint64_t> waits_{0};
};

}  // namespace kjit
