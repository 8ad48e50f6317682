// An in-memory LeaseStore for tests: daemons in one process share it as a
// fleet shares Redis. Leases expire on the steady clock as Redis's do, and
// the fake counts renewals and can play a store that is unreachable, for
// everyone or for one daemon.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "cache/lease_store.h"

namespace kjit::test {

class FakeLeases final : public LeaseStore {
 public:
  LeaseOutcome try_acquire(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) override;
  Status renew(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) override;
  Status release(std::string_view key, std::string_view owner) override;
  Result<std::optional<std::string>> holder(std::string_view key) override;

  // While false, every operation fails as an unreachable store does.
  void set_available(bool available);
  // From now on, owners starting with owner_prefix (one daemon's) reach
  // nothing: their acquisitions, renewals and releases fail as unreachable.
  void cut_off(std::string owner_prefix);
  // Successful renewals of leases on key, by any owner.
  int renewals(std::string_view key) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Lease {
    std::string owner;
    Clock::time_point expires;
  };
  // The live lease on key, after dropping it if it has expired; under mutex_.
  Lease* live(std::string_view key);
  bool reachable_by(std::string_view owner) const;

  mutable std::mutex mutex_;
  bool available_ = true;
  std::string cut_off_;  // empty: nobody
  std::map<std::string, Lease, std::less<>> leases_;
  std::map<std::string, int, std::less<>> renewals_;
};

}  // namespace kjit::test
