// The cache counters on the wire (kjit.v1.StatsResponse, TierStats,
// BlobStats): a message's single uint64 and double fields, found by name.
// The daemon writes them and the clients read them by these names, so what
// counts as a counter is decided here once, for both sides and their tests.
#pragma once

#include <google/protobuf/descriptor.h>

#include <set>
#include <string>
#include <string_view>

namespace kjit {

// The counter field of `message` named `name`; null when the message has no
// such field or it is no counter (repeated, or of another type).
const google::protobuf::FieldDescriptor* counter_field(const google::protobuf::Descriptor& message,
                                                       std::string_view name);

// Every counter field's name, in a multiset so that coverage tests compare
// them with the names a struct visits (a name visited twice shows).
std::multiset<std::string> counter_field_names(const google::protobuf::Descriptor& message);

}  // namespace kjit
