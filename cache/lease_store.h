// Compile leases: which of the daemons sharing a cache compiles a key. A
// lease names one owner and expires by itself, so an owner that crashes (or
// loses the store) blocks the key for at most its TTL; the owner renews it
// while its compile runs. RedisLeases is the fleet's implementation; tests
// use an in-memory one.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

enum class LeaseOutcome {
  acquired,       // the caller holds the lease until it releases it or the TTL passes
  held_by_other,  // someone else is compiling this key
  unavailable,    // the store cannot be asked; the caller should compile itself
};

// Thread-safe. Owners are opaque strings, distinct for each attempt.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  // Takes the lease on key for owner unless someone holds it; it expires
  // ttl from now unless renewed.
  virtual LeaseOutcome try_acquire(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) = 0;

  // Resets the lease's expiry to ttl from now, only while owner still holds
  // it: a not_found Error when it has expired or someone else holds it
  // (nothing changes then), another Error when the store failed, in which
  // case the lease may still be alive and renewing may be retried.
  virtual Status renew(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) = 0;

  // Drops the lease only if owner still holds it (it may have expired and
  // been taken by someone else, whose lease must survive). Releasing a lease
  // one does not hold succeeds and changes nothing.
  virtual Status release(std::string_view key, std::string_view owner) = 0;

  // The current holder of the lease on key, std::nullopt when nobody holds
  // it (an expired lease is held by nobody), an Error when the store failed.
  virtual Result<std::optional<std::string>> holder(std::string_view key) = 0;
};

}  // namespace kjit
