// Cache lookup, in-process single flight and the fleet's lease, in that
// order (see compile_coalescer.h).
#include "cache/compile_coalescer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "cache/lease_renewal.h"
#include "core/clock.h"

namespace kjit {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

CompileCoalescer::CompileCoalescer(std::shared_ptr<TieredCache> cache, std::shared_ptr<LeaseStore> leases, Options options)
    : cache_(std::move(cache)), leases_(std::move(leases)), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = default_lease_owner();
  if (options_.lease_renew_interval <= std::chrono::milliseconds::zero())
    options_.lease_renew_interval = std::max(options_.lease_ttl / 3, std::chrono::milliseconds(1));
}

std::optional<CacheOutcome> CompileCoalescer::lookup(const std::string& key, bool waited) {
  std::optional<CacheHit> hit = cache_->get(key);
  if (!hit) return std::nullopt;
  return CacheOutcome{std::move(hit->entry), hit->tier, waited};
}

Result<CacheOutcome> CompileCoalescer::get_or_compile(const std::string& key, const Compile& compile) {
  if (std::optional<CacheOutcome> hit = lookup(key, false)) return *std::move(hit);
  SingleFlight<Result<CacheOutcome>>::Outcome flight = flights_.run(key, [&] { return lead(key, compile); });
  if (flight.shared && flight.value) {
    ++joined_;
    flight.value->waited = true;
    // One compile ran for all of them: only its leader says "compiled".
    if (flight.value->source == CacheSource::compiled) flight.value->source = CacheSource::joined;
  }
  return std::move(flight.value);
}

Result<CacheOutcome> CompileCoalescer::lead(const std::string& key, const Compile& compile) {
  // A previous leader may have published between this caller's miss and its
  // turn; without this check that gap costs a second compile.
  if (std::shared_ptr<const CacheEntry> entry = cache_->peek_memory(key))
    return CacheOutcome{std::move(entry), CacheSource::memory, true};
  if (!leases_) return compile_and_put(key, compile);

  const std::string owner = options_.owner + ":" + std::to_string(++next_lease_);
  const Clock::time_point deadline = Clock::now() + options_.max_wait;
  bool waited = false;
  for (;;) {
    switch (leases_->try_acquire(key, owner, options_.lease_ttl)) {
      case LeaseOutcome::unavailable:
        return compile_and_put(key, compile);
      case LeaseOutcome::acquired: {
        Result<CacheOutcome> outcome = compile_holding_lease(key, owner, compile, waited);
        if (Status released = leases_->release(key, owner); !released)
          spdlog::debug("cache: lease on {} not released ({}); it expires by itself", key, released.error().message);
        return outcome;
      }
      case LeaseOutcome::held_by_other:
        break;
    }
    if (!waited) ++fleet_waits_;
    waited = true;
    // Wait while the other daemon holds the lease; its release (or expiry,
    // if it died) ends the wait.
    bool lease_gone = false;
    while (Clock::now() < deadline) {
      std::this_thread::sleep_for(options_.poll_interval);
      Result<std::optional<std::string>> holder = leases_->holder(key);
      if (!holder) return compile_and_put(key, compile);  // the store went away: stop waiting on it
      if (!holder->has_value()) {
        lease_gone = true;
        break;
      }
    }
    if (std::optional<CacheOutcome> hit = lookup(key, true)) return *std::move(hit);
    if (!lease_gone) {
      ++lease_timeouts_;
      spdlog::info("cache: waited {} ms for another daemon to compile {}; compiling here", options_.max_wait.count(),
                   key);
      return compile_and_put(key, compile);
    }
    // Released without an entry (its compile failed) or expired: take the
    // lease ourselves.
  }
}

Result<CacheOutcome> CompileCoalescer::compile_holding_lease(const std::string& key, const std::string& owner,
                                                        const Compile& compile, bool waited) {
  // Renewed for as long as this function runs, however long the compile
  // takes; stopped on return, before the caller releases the lease.
  LeaseRenewal renewal(*leases_, key, owner, options_.lease_ttl, options_.lease_renew_interval);
  // Another daemon may have finished and released just before we took the
  // lease: its entry is already in the shared tier. Asked with contains() so
  // the usual case, nothing there, counts no second miss.
  if (Store* shared = cache_->tier(CacheTier::redis)) {
    Result<bool> published = shared->contains(key);
    if (published && *published) {
      if (std::optional<CacheOutcome> hit = lookup(key, waited)) return *std::move(hit);
    }
  }
  return compile_and_put(key, compile);
}

Result<CacheOutcome> CompileCoalescer::compile_and_put(const std::string& key, const Compile& compile) {
  ++compiles_;
  const Clock::time_point start = Clock::now();
  Result<CacheEntry> compiled = compile();
  if (!compiled) return compiled.error();
  CacheEntry entry = std::move(compiled).value();
  entry.key = key;
  if (entry.compile_ms == 0) entry.compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (entry.created_unix == 0) entry.created_unix = unix_seconds_now();
  return CacheOutcome{cache_->put(std::move(entry)), CacheSource::compiled, false};
}

CoalescerStats CompileCoalescer::stats() const {
  return CoalescerStats{compiles_, joined_, fleet_waits_, lease_timeouts_};
}

}  // namespace kjit
