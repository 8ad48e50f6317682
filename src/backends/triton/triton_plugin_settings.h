// Plugins the daemon's configuration gives named Triton builds
// ([[triton.plugin]]): a pass plugin library, or settings for a plugin
// package installed in a build's environment, and the variables the plugin
// reads. A plugin is built for one Triton release: it is given to the builds
// it names and loaded by no other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/triton/triton_build.h"
#include "kjit/status.h"

namespace kjit {

struct TritonPluginSetting {
  std::vector<std::string> builds;  // names as `kjit toolkits` lists them
  std::string library;              // an absolute path; or
  std::string package;              // an installed plugin package's distribution
  std::map<std::string, std::string> environment;
  // "[[triton.plugin]] 2 (library /opt/p/libx.so)": how messages name it.
  std::string describe(size_t index) const;
  bool operator==(const TritonPluginSetting&) const = default;
};

// Whether a configured plugin may set this variable: a name of letters,
// digits and '_', not one that kjit sets or scrubs for every build (TRITON_*,
// KJIT_*, PATH, HOME, TMPDIR, LANG, PYTHON*, LD_*).
Status check_plugin_variable(const std::string& name);

// Gives each build the settings that name it (library digests read now).
// failed_precondition naming the setting and the build when a setting names
// a build that is not there, a package the build does not have installed, a
// library that cannot be read, or a library for a build that loads none.
Status configure_triton_plugins(std::vector<TritonBuild>& builds, const std::vector<TritonPluginSetting>& settings);

}  // namespace kjit
