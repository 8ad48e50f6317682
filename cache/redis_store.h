// The Redis tier, shared by a fleet of daemons: entries with a time-to-live
// that every hit renews, kept under "<prefix>v<format>:entry:<key>" on a
// RedisConnection (bounded times, a pool, a circuit breaker), which the
// compile leases (redis_leases.h) share.
//
// Thread-safe. bytes and entries are not tracked (Redis is shared and
// expires entries by itself); stats() reports them as 0. errors and skipped
// are the connection's, so they include the leases' operations.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cache/redis_connection.h"
#include "cache/store.h"

namespace kjit {

class RedisStore final : public Store {
 public:
  struct Options {
    // An entry expires this long after its last put or Redis hit.
    std::chrono::seconds ttl{7 * 24 * 3600};
  };

  // Connects lazily: constructing never touches the network.
  RedisStore(std::shared_ptr<RedisConnection> redis, Options options);

  std::string_view name() const override { return "redis"; }
  // A hit also resets the entry's expiry to options.ttl, in the same round
  // trip, so an entry still in use does not expire ttl after it was written.
  Result<std::optional<CacheEntry>> get(std::string_view key) override;
  // SET with EX options.ttl.
  Status put(const CacheEntry& entry) override;
  Status remove(std::string_view key) override;
  // EXISTS: one round trip, nothing fetched.
  Result<bool> contains(std::string_view key) override;
  StoreStats stats() const override;
  // last_access_unix comes from OBJECT IDLETIME.
  Result<std::vector<StoredKey>> list() override;

  // The Redis key of an entry.
  std::string entry_key(std::string_view key) const;

  // True while requests are being skipped because Redis was failing.
  bool breaker_open() const { return redis_->breaker_open(); }

 private:
  std::shared_ptr<RedisConnection> redis_;
  Options options_;
  StoreCounters counters_;
};

}  // namespace kjit
