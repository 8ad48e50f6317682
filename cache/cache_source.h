// What answered a request: a cache tier (memory, disk, redis, reapi), a compile it
// ran, or a compile it joined (another request's, in this daemon, that it
// waited for). One enum from the tiers up to the proto edge; its spelling is
// kjit compile --json's "cache" field.
#pragma once

#include <cstddef>
#include <string_view>

namespace kjit {

enum class CacheSource { memory, disk, redis, reapi, compiled, joined };
std::string_view to_string(CacheSource source);

// The tiers are the sources that come first: a tier is named by the source
// its hits report, and indexes arrays of k_cache_tier_count.
using CacheTier = CacheSource;
inline constexpr size_t k_cache_tier_count = 4;
inline constexpr size_t index_of(CacheTier tier) { return static_cast<size_t>(tier); }

}  // namespace kjit
