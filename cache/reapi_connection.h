// One Remote Execution API (REAPI v2) server as kjit's cache talks to it: the
// ActionCache, the content-addressable storage (batch calls, and ByteStream
// for blobs past the server's batch limit) and the capabilities that say
// which digest function and batch size the server takes. Any REAPI cache
// server answers it: bazel-remote, Buildbarn, BuildGrid, NativeLink.
//
// Bounded: every call has a deadline, and a circuit breaker refuses calls
// locally (no network wait) while the server is failing. Thread-safe; one
// gRPC channel serves every thread. Constructing never touches the network:
// the capabilities are asked for on first use and kept.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/circuit_breaker.h"
#include "kjit/status.h"

namespace kjit {

// A blob's name in the store: its digest (lowercase hex) and size.
struct ReapiDigest {
  std::string hash;
  int64_t size = 0;
  bool operator==(const ReapiDigest&) const = default;
};

// What the server said about itself (GetCapabilities), as kjit uses it.
struct ReapiCapabilities {
  std::string digest_function;  // "sha256" (what kjit picked of the server's list)
  int64_t max_batch_bytes = 0;  // the largest batch call kjit makes; larger blobs go through ByteStream
  bool updates_allowed = true;  // false: the ActionCache is read-only to clients
};

class ReapiConnection {
 public:
  struct Options {
    // grpc://host:port (plain), grpcs://host:port (TLS), unix:/path, or
    // host:port (plain).
    std::string endpoint;
    std::string instance;     // the REAPI instance name; "" is the server's default
    std::string tls_ca_file;  // grpcs: PEM roots; empty: the system's
    // A file holding a bearer token, sent as "authorization: Bearer <token>";
    // read again when it changes, so a rotated token takes effect.
    std::string token_file;
    std::vector<std::pair<std::string, std::string>> headers;  // sent with every call
    std::chrono::milliseconds timeout{3000};                   // each call
    CircuitBreaker::Options breaker{};
  };

  // The endpoint checked and a channel made (not connected); an unusable
  // endpoint or an unreadable CA or token file is an invalid_argument.
  static Result<std::shared_ptr<ReapiConnection>> open(Options options);
  ~ReapiConnection();
  ReapiConnection(const ReapiConnection&) = delete;
  ReapiConnection& operator=(const ReapiConnection&) = delete;

  const Options& options() const { return options_; }

  // Asked once, then kept; an error while the server cannot be reached.
  Result<ReapiCapabilities> capabilities();

  // The digest of bytes under the server's digest function.
  Result<ReapiDigest> digest_of(std::string_view bytes);

  // The ActionCache entry of an action: the digest of its output file named
  // `path`, and its bytes where the server inlined them; nullopt when the
  // action has no entry or no such output.
  struct Output {
    ReapiDigest digest;
    std::optional<std::string> contents;
  };
  Result<std::optional<Output>> get_output(std::string_view instance, const ReapiDigest& action,
                                           std::string_view path);
  // Records an ActionResult whose one output file `path` is `output`, or,
  // without one, an ActionResult with no output (what removing looks like).
  Status update_output(std::string_view instance, const ReapiDigest& action, std::string_view path,
                       const std::optional<ReapiDigest>& output);

  // A blob's bytes as the server sent them (unchecked: the caller checks the
  // digest); nullopt when the store does not have it.
  Result<std::optional<std::string>> read_blob(std::string_view instance, const ReapiDigest& digest);
  // Uploads blobs (their digests already computed), in as few batch calls
  // as the server's limit allows, and each one past it through ByteStream.
  Status write_blobs(std::string_view instance, const std::vector<std::pair<ReapiDigest, std::string_view>>& blobs);
  // Of these digests, the ones the store does not have (FindMissingBlobs).
  Result<std::vector<ReapiDigest>> missing_blobs(std::string_view instance, const std::vector<ReapiDigest>& digests);

  // True from the failure that opened the breaker until a call succeeds.
  bool breaker_open() const { return breaker_.is_open(); }
  uint64_t skipped() const { return skipped_.load(std::memory_order_relaxed); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  struct Stubs;
  explicit ReapiConnection(Options options);

  // The breaker's verdict before a call; a refusal is counted as skipped.
  Status admit();
  // A call's outcome to the breaker and the counters: a failure of the
  // server or the network opens it, an answer (a miss included) does not.
  void settle(bool server_failed);
  // The headers every call carries: the configured ones and the token.
  std::vector<std::pair<std::string, std::string>> call_metadata();

  Options options_;
  std::unique_ptr<Stubs> stubs_;
  CircuitBreaker breaker_;
  std::mutex mutex_;  // guards capabilities_ and the token
  std::optional<ReapiCapabilities> capabilities_;
  std::string token_;
  int64_t token_mtime_ns_ = -1;
  std::atomic<uint64_t> skipped_{0}, errors_{0};
};

}  // namespace kjit
