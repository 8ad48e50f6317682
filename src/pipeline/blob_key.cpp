#include "pipeline/blob_key.h"

#include <algorithm>

#include "pipeline/cache_key.h"

namespace kjit {
namespace {

// Length-prefixed, so no choice of fields can spell another choice's input.
void append_field(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

}  // namespace

std::string blob_cache_key(std::string_view kind, std::string_view ns, std::string_view key, std::string_view name) {
  std::string input(k_blob_key_domain);
  input += '\0';
  append_field(input, kind);
  append_field(input, ns);
  append_field(input, key);
  append_field(input, name);
  return sha256_hex(input) + std::string(k_blob_key_suffix);
}

bool is_blob_cache_key(std::string_view text) {
  return text.size() == 64 + k_blob_key_suffix.size() && text.ends_with(k_blob_key_suffix) &&
         is_key_hex(text.substr(0, 64));
}

std::string encode_blob_group_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    out += name;
    out += '\n';
  }
  return out;
}

std::vector<std::string> decode_blob_group_names(std::string_view bytes) {
  std::vector<std::string> names;
  while (!bytes.empty()) {
    size_t end = bytes.find('\n');
    if (end == std::string_view::npos) end = bytes.size();
    if (end > 0) names.emplace_back(bytes.substr(0, end));
    bytes.remove_prefix(std::min(bytes.size(), end + 1));
  }
  return names;
}

}  // namespace kjit
