// The daemon's compile cache, assembled from its configuration: memory, disk
// and Redis tiers, and one compile per key across requests and daemons.
#pragma once

#include <memory>

#include "cache/compile_once.h"
#include "cache/disk_store.h"
#include "cache/redis_store.h"
#include "cache/tiered_cache.h"
#include "server/daemon_config.h"

namespace kjit {

struct CompileCache {
  std::shared_ptr<TieredCache> tiers;
  std::shared_ptr<DiskStore> disk;    // null when the disk tier is off
  std::shared_ptr<RedisStore> redis;  // null when the Redis tier is off
  std::shared_ptr<CompileOnce> once;
};

// Null when the cache is turned off. A tier that cannot be opened (an
// unwritable directory) is logged and left out, never fatal.
std::shared_ptr<CompileCache> open_compile_cache(const CacheConfig& config);

}  // namespace kjit
