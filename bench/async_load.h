// A load generator that is not the bottleneck: N clients, each its own
// channel (connection) with one call in flight, all driven by one thread on
// one completion queue — the shape of gRPC's own qps benchmark client. It
// measures what the daemon sustains when the clients are cheap; blocking
// client threads (cache_bench's other throughput table) also measure what
// N blocking callers cost on the same cores.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "kjit/status.h"
#include "kjit/v1/compiler.pb.h"

namespace kjit::bench {

struct AsyncLoadResult {
  uint64_t completed = 0;  // calls answered OK and accepted by the check
  double seconds = 0;      // the window actually measured
};

// Every response must pass `check` (an Error stops the run and is returned).
using CompileCheck = std::function<Status(const v1::CompileResponse&)>;

// Compile `request` over `clients` channels to unix:`socket_path` for
// `window`, after one warm-up call per channel.
Result<AsyncLoadResult> async_compile_load(const std::string& socket_path, const v1::CompileRequest& request,
                                           int clients, std::chrono::duration<double> window,
                                           const CompileCheck& check);

// The same for Diagnostics.Echo of `payload`, each answer compared with it.
Result<AsyncLoadResult> async_echo_load(const std::string& socket_path, const std::string& payload, int clients,
                                        std::chrono::duration<double> window);

}  // namespace kjit::bench
