// What of the daemon's cache a caller reaches: its own namespace's compile
// entries and its own namespace's blobs. The services take their views of
// the cache from here, so which namespace a caller gets is decided once.
#pragma once

#include "server/compile/daemon_cache.h"
#include "server/compile/namespaced_cache.h"
#include "server/rpc/call_gate.h"

namespace kjit {

inline NamespacedCache compiles_of(const DaemonCache& cache, const Caller& caller) {
  return cache.compiles_in(caller.ns);
}

inline NamespacedCache blobs_of(const DaemonCache& cache, const Caller& caller) { return cache.blobs_in(caller.ns); }

}  // namespace kjit
