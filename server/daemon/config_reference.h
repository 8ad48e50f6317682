// The configuration reference (docs/configuration-reference.md) and the
// manual page each key's topic lives on, both expanded from the key table
// (server/config/config_keys.h), so the reference and kjitd --help never
// describe a key the table lacks or miss one it has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// A topic of the manual that keys (and kjitd's flags) are grouped under.
struct ConfigTopic {
  std::string_view title;  // "Compile workers and bounds"
  std::string_view page;   // relative to docs/: "operating.md#compile-workers-confined-and-bounded"
};

// The topics, in the order the reference and kjitd --help show them.
const std::vector<ConfigTopic>& config_topics();

// The topic of the key at `path` ("cache.disk_bytes"). A key no rule names
// falls under its section's topic, so a new key is never left out.
const ConfigTopic& config_topic_of(std::string_view path);

// docs/configuration-reference.md, as kjitd --print-config-reference writes it.
std::string config_reference_markdown();

}  // namespace kjit
