// Where the example plugins of tests/plugins are built, for the integration
// tests that load them into a daemon.
#pragma once

#include <string>

namespace kjit::test {

inline std::string plugin_path(const std::string& name) {
  return std::string(KJIT_TEST_PLUGIN_DIR) + "/lib" + name + ".so";
}

}  // namespace kjit::test
