// Compile leases in the fleet's Redis: SET NX PX to take one, and scripts
// that renew or drop it only while it still names the caller. Keys are
// "<prefix>v<format>:lease:<key>" on a RedisConnection shared with the Redis
// tier, so an outage opens one breaker for both.
#pragma once

#include <memory>

#include "cache/lease_store.h"
#include "cache/redis_connection.h"

namespace kjit {

class RedisLeases final : public LeaseStore {
 public:
  explicit RedisLeases(std::shared_ptr<RedisConnection> redis);

  // unavailable when Redis cannot be asked (the breaker is open, say).
  LeaseOutcome try_acquire(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) override;
  Status renew(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) override;
  Status release(std::string_view key, std::string_view owner) override;
  Result<std::optional<std::string>> holder(std::string_view key) override;

  // The Redis key of the lease on key.
  std::string lease_key(std::string_view key) const;

 private:
  std::shared_ptr<RedisConnection> redis_;
};

}  // namespace kjit
