// How kjitd chooses among the CUDA toolkits that support a target (the
// configuration's toolkit_policy); toolkit_routing.h applies it.
#pragma once

#include <optional>
#include <string_view>

namespace kjit {

enum class ToolkitPolicy {
  system_first,  // the system toolkit where it supports the target, else the newest that does
  newest,        // the newest toolkit that supports the target
};

std::string_view to_string(ToolkitPolicy policy);
std::optional<ToolkitPolicy> parse_toolkit_policy(std::string_view text);  // "system-first", "newest"

}  // namespace kjit
