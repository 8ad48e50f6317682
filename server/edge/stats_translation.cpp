#include "server/edge/stats_translation.h"

#include <string>

#include "convert/counter_fields.h"

namespace kjit {
namespace {

template <typename Value>
bool set_by_name(google::protobuf::Message& message, std::string_view name, Value value) {
  using google::protobuf::FieldDescriptor;
  const FieldDescriptor* field = counter_field(*message.GetDescriptor(), name);
  if (!field) return false;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64)
    reflection->SetUInt64(&message, field, static_cast<uint64_t>(value));
  else
    reflection->SetDouble(&message, field, static_cast<double>(value));
  return true;
}

}  // namespace

bool set_counter(google::protobuf::Message& message, std::string_view name, uint64_t value) {
  return set_by_name(message, name, value);
}

bool set_counter(google::protobuf::Message& message, std::string_view name, double value) {
  return set_by_name(message, name, value);
}

v1::StatsResponse to_stats_response(const TieredCacheStats& cache, const CoalescerStats& coalescer,
                                    const BlobStats& blobs) {
  v1::StatsResponse response;
  for (const TierStats& tier : cache.tiers) {
    v1::TierStats& out = *response.add_tiers();
    out.set_tier(std::string(to_string(tier.tier)));
    set_counters(tier, out);
  }
  set_counters(cache, response);
  set_counters(coalescer, response);
  set_counters(blobs, *response.mutable_blobs());
  return response;
}

}  // namespace kjit
