// The daemon's cache, assembled from its configuration: the memory, disk and
// Redis tiers, and the coalescer that lets one compile per key run across
// requests and daemons.
#pragma once

#include <memory>

#include "cache/compile_coalescer.h"
#include "cache/disk_store.h"
#include "cache/redis_store.h"
#include "cache/tiered_cache.h"
#include "server/config/daemon_config.h"

namespace kjit {

struct DaemonCache {
  std::shared_ptr<TieredCache> tiers;
  std::shared_ptr<DiskStore> disk;    // null when the disk tier is off
  std::shared_ptr<RedisStore> redis;  // null when the Redis tier is off
  std::shared_ptr<CompileCoalescer> once;
};

// Null when the cache is turned off. A tier that cannot be opened (an
// unwritable directory) is logged and left out, never fatal.
std::shared_ptr<DaemonCache> open_daemon_cache(const CacheConfig& config);

}  // namespace kjit
