#include "pipeline/toolkit_policy.h"

namespace kjit {

std::string_view to_string(ToolkitPolicy policy) {
  return policy == ToolkitPolicy::newest ? "newest" : "system-first";
}

std::optional<ToolkitPolicy> parse_toolkit_policy(std::string_view text) {
  if (text == "system-first") return ToolkitPolicy::system_first;
  if (text == "newest") return ToolkitPolicy::newest;
  return std::nullopt;
}

}  // namespace kjit
