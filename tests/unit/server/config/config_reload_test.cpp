// What a reload changes: the keys that differ, split by whether a reload
// puts them in force (the table's reloadable rows) or they wait for a
// restart, and the configuration the daemon then serves with. The manual
// names the reloadable keys; this checks its list against the rows.
#include "server/config/config_reload.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "server/config/config_keys.h"

namespace kjit {
namespace {

TEST(ConfigReload, NothingChangedIsNoChange) {
  const DaemonConfig config;
  const ConfigChanges changes = config_changes(config, config);
  EXPECT_TRUE(changes.reloadable.empty());
  EXPECT_TRUE(changes.needs_restart.empty());
}

TEST(ConfigReload, ChangesAreSplitByWhetherAReloadAppliesThem) {
  const DaemonConfig in_force;
  DaemonConfig read;
  read.tenants_file = "/etc/kjit/tenants.toml";
  read.log_level = "debug";
  read.cache.memory_bytes = 1024;
  read.plugins = {"/opt/plugin.so"};
  const ConfigChanges changes = config_changes(in_force, read);
  EXPECT_EQ(changes.reloadable, (std::vector<std::string>{"tenants", "log_level"}));
  EXPECT_EQ(changes.needs_restart, (std::vector<std::string>{"cache.memory_bytes", "plugins"}));

  const DaemonConfig next = with_reloadable_keys(in_force, read);
  EXPECT_EQ(next.tenants_file, "/etc/kjit/tenants.toml");
  EXPECT_EQ(next.log_level, "debug");
  EXPECT_EQ(next.cache.memory_bytes, in_force.cache.memory_bytes) << "a key that needs a restart was applied";
  EXPECT_TRUE(next.plugins.empty());
}

TEST(ConfigReload, TheStructuredKeysAllNeedARestart) {
  const DaemonConfig in_force;
  DaemonConfig read;
  read.toolkit_paths = {"/opt/venv"};
  read.toolkits.push_back({});
  read.blob_sharing.push_back({.group = "ml", .uids = {}, .ns = "ml"});
  read.pipelines.pipelines.push_back({});
  read.pipelines.edits.push_back({});
  read.llvm_pass_plugins = {"/opt/pass.so"};
  read.triton_builds = {"/opt/triton-venv"};
  const ConfigChanges changes = config_changes(in_force, read);
  EXPECT_TRUE(changes.reloadable.empty());
  EXPECT_EQ(
      std::set<std::string>(changes.needs_restart.begin(), changes.needs_restart.end()),
      (std::set<std::string>{"toolkit_paths", "toolkits", "blob_sharing", "pipelines", "edits", "llvm_pass_plugins",
                                 "triton.builds"}));
}

// The manual's line "Keys a reload puts in force: `tenants`, `[tls] cert`,
// ...": exactly the reloadable rows, as paths.
TEST(ConfigReload, TheManualNamesEveryReloadableKeyAndNoOther) {
  std::ifstream in(std::string(KJIT_SOURCE_DIR) + "/docs/operating.md");
  std::string line;
  std::set<std::string> documented;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind("Keys a reload puts in force:", 0) != 0) continue;
    found = true;
    const std::regex code("`([^`]*)`");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), code); it != std::sregex_iterator(); ++it) {
      std::string key = (*it)[1];
      std::smatch section;
      if (std::regex_match(key, section, std::regex(R"(\[([a-z_]+)\] ([a-z_]+))")))
        key = section[1].str() + "." + section[2].str();
      documented.insert(key);
    }
  }
  ASSERT_TRUE(found) << "docs/operating.md has no line \"Keys a reload puts in force: ...\"";
  std::set<std::string> reloadable;
  for (const ConfigKey& key : config_keys())
    if (key.reloadable) reloadable.insert(std::string(key.path));
  EXPECT_EQ(documented, reloadable);
}

}  // namespace
}  // namespace kjit
