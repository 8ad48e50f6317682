// Coalesces compiles: get-or-compile with one compile per key. In-process waiters share a
// single flight, and across daemons sharing a cache a lease (a LeaseStore:
// Redis in a fleet) lets one daemon compile, renewing the lease while it
// does, and the others poll for its result (bounded, then compile
// themselves).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "cache/lease_store.h"
#include "cache/single_flight.h"
#include "cache/tiered_cache.h"

namespace kjit {

struct CacheOutcome {
  std::shared_ptr<const CacheEntry> entry;
  CacheSource source = CacheSource::compiled;
  // Another request did the work: an in-process leader, or another daemon
  // holding the lease.
  bool waited = false;
};

struct CoalescerStats {
  uint64_t compiles = 0;        // compiles this daemon ran
  uint64_t joined = 0;          // requests that shared an in-process compile
  uint64_t fleet_waits = 0;     // leaders that waited on another daemon's lease
  uint64_t lease_timeouts = 0;  // waits that ran past max_wait and compiled anyway
};

// The counters by name, as kjit.v1.StatsResponse names them: visit(name,
// counter), counter a reference.
template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, CoalescerStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("compiles", stats.compiles);
  visit("joined", stats.joined);
  visit("fleet_waits", stats.fleet_waits);
  visit("lease_timeouts", stats.lease_timeouts);
}

class CompileCoalescer {
 public:
  struct Options {
    // How long a lease outlives a daemon that stopped renewing it (crashed,
    // or lost the lease store): the holder renews it while its compile runs,
    // so this need not exceed the compile time, only bound how long a dead
    // holder keeps other daemons waiting.
    std::chrono::milliseconds lease_ttl{120'000};
    // How often the holder extends its lease back to lease_ttl; 0 picks
    // lease_ttl / 3, so one failed renewal still leaves the lease alive.
    std::chrono::milliseconds lease_renew_interval{0};
    std::chrono::milliseconds max_wait{60'000};
    std::chrono::milliseconds poll_interval{50};
    std::string owner{};  // lease owner prefix; empty picks "<host>:<pid>:<random>"
  };
  // Returns the compiled entry; its key is set by CompileCoalescer, and
  // compile_ms and created_unix when left at 0.
  using Compile = std::function<Result<CacheEntry>()>;

  // leases may be null (no fleet): then only the in-process flight applies.
  // A previous holder's result is looked for in the cache's Redis tier, the
  // one the daemons sharing the leases share.
  CompileCoalescer(std::shared_ptr<TieredCache> cache, std::shared_ptr<LeaseStore> leases, Options options);

  // The entry for key from the cache, or from one compile shared by every
  // concurrent caller. Compile errors are returned to every waiter and are
  // never cached.
  Result<CacheOutcome> get_or_compile(const std::string& key, const Compile& compile);

  CoalescerStats stats() const;

 private:
  Result<CacheOutcome> lead(const std::string& key, const Compile& compile);
  Result<CacheOutcome> compile_holding_lease(const std::string& key, const std::string& owner, const Compile& compile,
                                             bool waited);
  Result<CacheOutcome> compile_and_put(const std::string& key, const Compile& compile);
  std::optional<CacheOutcome> lookup(const std::string& key, bool waited);

  std::shared_ptr<TieredCache> cache_;
  std::shared_ptr<LeaseStore> leases_;
  Options options_;
  SingleFlight<Result<CacheOutcome>> flights_;
  std::atomic<uint64_t> next_lease_{0};
  std::atomic<uint64_t> compiles_{0}, joined_{0}, fleet_waits_{0}, lease_timeouts_{0};
};

}  // namespace kjit
