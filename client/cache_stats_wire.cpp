#include "client/cache_stats_wire.h"

#include <string>

#include "convert/counter_fields.h"

namespace kjit {
namespace {

template <typename Value>
std::optional<Value> counter_by_name(const google::protobuf::Message& message, std::string_view name) {
  using google::protobuf::FieldDescriptor;
  const FieldDescriptor* field = counter_field(*message.GetDescriptor(), name);
  if (!field) return std::nullopt;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64)
    return static_cast<Value>(reflection->GetUInt64(message, field));
  return static_cast<Value>(reflection->GetDouble(message, field));
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
  for (const v1::NamespaceStats& ns : response.namespaces()) {
    CacheNamespaceStats& out = stats.namespaces.emplace_back();
    out.ns = ns.namespace_();
    read_counters(ns, out);
  }
  stats.namespace_only = response.namespace_only();
  read_counters(response.pch(), stats.pch);
  return stats;
}

}  // namespace kjit
