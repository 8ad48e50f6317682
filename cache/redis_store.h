// The Redis tier, shared by a fleet of daemons: entries with a time-to-live
// that every hit renews, bounded connect and operation times, a circuit
// breaker that skips Redis while it is down, and leases (SET NX PX, renewable
// by their owner) for one compile across daemons.
//
// Thread-safe: each operation borrows a connection from a small pool of idle
// connections (a new one is made when none is idle), so threads never share
// a hiredis context. bytes and entries are not tracked (Redis is shared and
// expires entries by itself); stats() reports them as 0.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "circuit_breaker.h"
#include "store.h"

struct redisContext;

namespace kjit {

enum class LeaseOutcome {
  acquired,       // the caller holds the lease until it releases it or the TTL passes
  held_by_other,  // someone else is compiling this key
  unavailable,    // Redis cannot be asked; the caller should compile itself
};

class RedisStore final : public Store {
 public:
  struct Options {
    std::string host = "127.0.0.1";  // a path starting with '/' means a unix socket
    int port = 6379;
    // An entry expires this long after its last put or Redis hit.
    std::chrono::seconds ttl{7 * 24 * 3600};
    std::chrono::milliseconds connect_timeout{200};
    std::chrono::milliseconds operation_timeout{500};
    // Namespace of every key kjit writes: "<prefix>v<format>:entry:<key>" and
    // "<prefix>v<format>:lease:<key>", <format> being k_entry_format_version:
    // kjit versions sharing one Redis never read (and remove as corrupt)
    // each other's entries, nor wait on each other's compiles.
    std::string key_prefix = "kjit:";
    size_t max_idle_connections = 8;
    CircuitBreaker::Options breaker;
  };

  // Connects lazily: constructing never touches the network.
  explicit RedisStore(Options options);
  ~RedisStore() override;

  std::string_view name() const override { return "redis"; }
  // A hit also resets the entry's expiry to options.ttl, in the same round
  // trip, so an entry still in use does not expire ttl after it was written.
  Result<std::optional<CacheEntry>> get(std::string_view key) override;
  // SET with EX options.ttl.
  Status put(const CacheEntry& entry) override;
  Status remove(std::string_view key) override;
  StoreStats stats() const override;
  // last_access_unix comes from OBJECT IDLETIME.
  Result<std::vector<StoredKey>> list() override;

  // Whether an entry is stored under key, without fetching or counting it.
  Result<bool> contains(std::string_view key);

  // Takes the lease on key for owner unless someone holds it; it expires
  // after ttl so a crashed owner cannot block the key for long.
  LeaseOutcome try_acquire_lease(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl);

  // Drops the lease only if owner still holds it (it may have expired and
  // been taken by another daemon, whose lease must survive).
  Status release_lease(std::string_view key, std::string_view owner);

  // Resets the lease's expiry to ttl from now, only while owner still holds
  // it: a not_found Error when it has expired or another daemon holds it
  // (nothing is changed then), another Error when Redis failed.
  Status extend_lease(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl);

  // The current holder of the lease on key, std::nullopt when nobody holds it.
  Result<std::optional<std::string>> lease_holder(std::string_view key);

  // The Redis keys of an entry and of its lease.
  std::string entry_key(std::string_view key) const;
  std::string lease_key(std::string_view key) const;

  // True while requests are being skipped because Redis was failing.
  bool breaker_open() const { return breaker_.is_open(); }

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const;
  };
  using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;
  struct Reply;

  Result<std::vector<Reply>> run(const std::vector<std::vector<std::string>>& commands);
  Result<std::vector<Reply>> run_on(redisContext* context, const std::vector<std::vector<std::string>>& commands,
                                    bool& peer_closed);
  Result<ContextPtr> connect();
  void return_connection(ContextPtr context);
  void drop_idle_connections();
  std::string namespace_prefix() const;
  std::string address() const;

  Options options_;
  CircuitBreaker breaker_;
  std::mutex pool_mutex_;
  std::vector<ContextPtr> idle_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, puts_{0}, corruptions_{0}, errors_{0}, skipped_{0};
};

}  // namespace kjit
