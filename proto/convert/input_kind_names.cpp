#include "convert/input_kind_names.h"

#include <cctype>

namespace kjit {
namespace {

constexpr std::string_view k_prefix = "INPUT_KIND_";

std::string lower_dashed(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string lower(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<WireInputKind> read_descriptor() {
  std::vector<WireInputKind> kinds;
  const google::protobuf::EnumDescriptor* descriptor = v1::InputKind_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* value = descriptor->value(i);
    if (value->number() == v1::INPUT_KIND_UNSPECIFIED) continue;
    WireInputKind kind;
    kind.value = static_cast<v1::InputKind>(value->number());
    kind.enum_name = value->name();
    kind.name = canonical_input_kind_name(value->name());
    const google::protobuf::EnumValueOptions& options = value->options();
    for (int k = 0; k < options.ExtensionSize(v1::aliases); ++k) kind.aliases.push_back(options.GetExtension(v1::aliases, k));
    for (int k = 0; k < options.ExtensionSize(v1::file_extensions); ++k)
      kind.extensions.push_back(options.GetExtension(v1::file_extensions, k));
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

const std::vector<WireInputKind>& wire_input_kinds() {
  static const std::vector<WireInputKind> kinds = read_descriptor();
  return kinds;
}

std::string canonical_input_kind_name(std::string_view enum_name) {
  if (enum_name.starts_with(k_prefix)) enum_name.remove_prefix(k_prefix.size());
  return lower_dashed(enum_name);
}

std::optional<v1::InputKind> parse_wire_input_kind(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  const std::string upper_text = upper(text);
  if (upper_text.starts_with(k_prefix)) {
    for (const WireInputKind& kind : wire_input_kinds())
      if (kind.enum_name == upper_text) return kind.value;
    return std::nullopt;
  }
  const std::string wanted = lower_dashed(text);
  for (const WireInputKind& kind : wire_input_kinds()) {
    if (kind.name == wanted) return kind.value;
    for (const std::string& alias : kind.aliases)
      if (lower_dashed(alias) == wanted) return kind.value;
  }
  return wire_input_kind_of_extension(text);
}

std::optional<v1::InputKind> wire_input_kind_of_extension(std::string_view extension) {
  const std::string wanted = lower(extension);
  for (const WireInputKind& kind : wire_input_kinds())
    for (const std::string& known : kind.extensions)
      if (lower(known) == wanted) return kind.value;
  return std::nullopt;
}

std::string wire_input_kind_names() {
  std::vector<std::string> names;
  for (const WireInputKind& kind : wire_input_kinds()) names.push_back(kind.name);
  return join(names);
}

std::string wire_input_kind_aliases() {
  std::vector<std::string> aliases;
  for (const WireInputKind& kind : wire_input_kinds()) aliases.insert(aliases.end(), kind.aliases.begin(), kind.aliases.end());
  return join(aliases);
}

std::string wire_input_kind_extensions() {
  std::vector<std::string> extensions;
  for (const WireInputKind& kind : wire_input_kinds())
    extensions.insert(extensions.end(), kind.extensions.begin(), kind.extensions.end());
  return join(extensions);
}

}  // namespace kjit
