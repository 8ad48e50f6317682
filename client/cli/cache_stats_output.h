// `kjit cache stats` as JSON (--json) and as text, each counter printed from
// its name (for_each_counter, kjit/client.h): a counter added to the wire
// and to the client's structs shows in both without a line here.
#pragma once

#include <string>

#include "kjit/client.h"

namespace kjit::cli {

// One line: {"tiers": [{"tier": ..., counters...}], counters..., "blobs": {counters...}}.
std::string cache_stats_json(const CacheStats& stats);

// The tier table, the compile counters' line and the client blobs' line.
std::string cache_stats_text(const CacheStats& stats);

}  // namespace kjit::cli
