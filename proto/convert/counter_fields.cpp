#include "convert/counter_fields.h"

namespace kjit {
namespace {

bool is_counter(const google::protobuf::FieldDescriptor& field) {
  using google::protobuf::FieldDescriptor;
  return !field.is_repeated() &&
         (field.cpp_type() == FieldDescriptor::CPPTYPE_UINT64 || field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE);
}

}  // namespace

const google::protobuf::FieldDescriptor* counter_field(const google::protobuf::Descriptor& message,
                                                       std::string_view name) {
  const google::protobuf::FieldDescriptor* field = message.FindFieldByName(std::string(name));
  return field && is_counter(*field) ? field : nullptr;
}

std::multiset<std::string> counter_field_names(const google::protobuf::Descriptor& message) {
  std::multiset<std::string> names;
  for (int i = 0; i < message.field_count(); ++i)
    if (is_counter(*message.field(i))) names.insert(message.field(i)->name());
  return names;
}

}  // namespace kjit
