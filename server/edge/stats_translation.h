// The daemon's cache counters as the Stats RPC reports them (kjit.v1.
// StatsResponse). Each counter is written by its name: the counter structs
// name theirs (for_each_counter, beside each struct in cache/) and the
// message's field of that name is set through protobuf's reflection, so a
// counter added to a struct and to cache.proto needs no line here.
// tests/unit/server/edge/stats_translation_test.cpp fails when a counter
// field of the messages has no counter of its name, or a counter no field.
#pragma once

#include <cstdint>
#include <string_view>

#include <google/protobuf/message.h>

#include "cache/blob_stats.h"
#include "cache/compile_coalescer.h"
#include "cache/tiered_cache.h"
#include "kjit/v1/cache.pb.h"

namespace kjit {

v1::StatsResponse to_stats_response(const TieredCacheStats& cache, const CoalescerStats& coalescer,
                                    const BlobStats& blobs);

// Sets message's uint64 or double field `name` to value, converted to the
// field's type; false when the message has no such field.
bool set_counter(google::protobuf::Message& message, std::string_view name, uint64_t value);
bool set_counter(google::protobuf::Message& message, std::string_view name, double value);

// Sets every counter that `counters` names (for_each_counter) into message.
template <typename Counters>
void set_counters(const Counters& counters, google::protobuf::Message& message) {
  for_each_counter(counters, [&message](std::string_view name, const auto& value) { set_counter(message, name, value); });
}

}  // namespace kjit
