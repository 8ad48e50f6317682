#include "client/cache_stats_wire.h"

#include <string>

namespace kjit {
namespace {

template <typename Value>
std::optional<Value> counter_by_name(const google::protobuf::Message& message, std::string_view name) {
  using google::protobuf::FieldDescriptor;
  const FieldDescriptor* field = message.GetDescriptor()->FindFieldByName(std::string(name));
  if (!field || field->is_repeated()) return std::nullopt;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT64: return static_cast<Value>(reflection->GetUInt64(message, field));
    case FieldDescriptor::CPPTYPE_DOUBLE: return static_cast<Value>(reflection->GetDouble(message, field));
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<uint64_t> uint64_counter(const google::protobuf::Message& message, std::string_view name) {
  return counter_by_name<uint64_t>(message, name);
}

std::optional<double> double_counter(const google::protobuf::Message& message, std::string_view name) {
  return counter_by_name<double>(message, name);
}

CacheStats to_cache_stats(const v1::StatsResponse& response) {
  CacheStats stats;
  for (const v1::TierStats& tier : response.tiers()) {
    CacheTierStats& out = stats.tiers.emplace_back();
    out.tier = tier.tier();
    read_counters(tier, out);
  }
  read_counters(response, stats);
  read_counters(response.blobs(), stats.blobs);
  return stats;
}

}  // namespace kjit
