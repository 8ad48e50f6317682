// One Redis server as kjit talks to it: a pool of hiredis connections,
// bounded connect and operation times, a circuit breaker that skips Redis
// while it is down, and the namespace of every key kjit writes there. The
// Redis tier (RedisStore) and the compile leases (RedisLeases) share one, so
// an outage seen by either opens the breaker for both.
//
// Thread-safe: each batch borrows a connection from a small pool of idle
// ones (a new one is made when none is idle), so threads never share a
// hiredis context. Constructing never touches the network.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cache/circuit_breaker.h"
#include "kjit/status.h"

struct redisContext;

namespace kjit {

class RedisConnection {
 public:
  struct Options {
    std::string host = "127.0.0.1";  // a path starting with '/' means a unix socket
    int port = 6379;
    std::chrono::milliseconds connect_timeout{200};
    std::chrono::milliseconds operation_timeout{500};
    // Namespace of every key kjit writes: "<prefix>v<format>:<kind>:<key>",
    // <format> being k_entry_format_version: kjit versions sharing one Redis
    // never read (and remove as corrupt) each other's entries, nor wait on
    // each other's compiles.
    std::string key_prefix = "kjit:";
    size_t max_idle_connections = 8;
    CircuitBreaker::Options breaker;
  };

  // A reply copied out of hiredis's structure, so no hiredis type or manual
  // free leaks out of redis_connection.cpp.
  struct Reply {
    enum class Kind { nil, string, status, integer, array, error, other };
    Kind kind = Kind::nil;
    std::string str;  // string, status and error replies
    long long integer = 0;
    std::vector<Reply> elements;
  };
  using Command = std::vector<std::string>;

  explicit RedisConnection(Options options);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends the commands in one round trip and returns their replies in
  // order. An unavailable or deadline_exceeded Error when Redis cannot be
  // reached or answers too late (counted as an error), or when the breaker
  // is open (counted as skipped).
  Result<std::vector<Reply>> run(const std::vector<Command>& commands);

  // One command whose reply must be one of `expected`; any other reply (an
  // error reply included) is counted as an error and returned as an
  // internal Error naming the command.
  Result<Reply> run_one(const Command& command, std::initializer_list<Reply::Kind> expected);

  // Counts and describes a reply its caller did not expect.
  Error unexpected_reply(std::string_view command, const Reply& reply);

  // "<prefix>v<format>:<kind>:<key>": where kjit keeps a key of that kind.
  std::string key(std::string_view kind, std::string_view key) const;

  // Operations that failed (network, timeout, unexpected reply), and those
  // not attempted because the breaker was open.
  uint64_t errors() const { return errors_; }
  uint64_t skipped() const { return skipped_; }

  // True while requests are being skipped because Redis was failing.
  bool breaker_open() const { return breaker_.is_open(); }

  // "host:port", or the socket's path.
  std::string address() const;

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const;
  };
  using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

  Result<std::vector<Reply>> run_on(redisContext* context, const std::vector<Command>& commands, bool& peer_closed);
  Result<ContextPtr> connect();
  void return_connection(ContextPtr context);
  void drop_idle_connections();

  Options options_;
  CircuitBreaker breaker_;
  std::mutex pool_mutex_;
  std::vector<ContextPtr> idle_;
  std::atomic<uint64_t> errors_{0}, skipped_{0};
};

}  // namespace kjit
