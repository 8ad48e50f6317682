// The Stats answer (kjit.v1.StatsResponse) as the client's CacheStats. Each
// counter is read by its name: for_each_counter (kjit/client.h) names the
// struct's counters and the message's field of that name is read through
// protobuf's reflection, so a counter added to cache.proto and to the struct
// needs no line here (tests/unit/client/cache_stats_test.cpp checks both
// sides name the same counters).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include <google/protobuf/message.h>

#include "kjit/client.h"
#include "kjit/v1/cache.pb.h"

namespace kjit {

CacheStats to_cache_stats(const v1::StatsResponse& response);

// message's uint64 or double field `name`, converted to the type asked for;
// nullopt when the message has no such field.
std::optional<uint64_t> uint64_counter(const google::protobuf::Message& message, std::string_view name);
std::optional<double> double_counter(const google::protobuf::Message& message, std::string_view name);

// Reads every counter that `counters` names (for_each_counter) from message;
// a counter the message lacks (an older daemon) keeps its value.
template <typename Counters>
void read_counters(const google::protobuf::Message& message, Counters& counters) {
  for_each_counter(counters, [&message](std::string_view name, auto& counter) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(counter)>, double>) {
      if (std::optional<double> value = double_counter(message, name)) counter = *value;
    } else {
      if (std::optional<uint64_t> value = uint64_counter(message, name)) counter = *value;
    }
  });
}

}  // namespace kjit
