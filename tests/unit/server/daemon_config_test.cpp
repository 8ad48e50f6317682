// The daemon's TOML configuration: numbers are integers in range, or the
// file is refused naming the key (never converted with overflow or cut).
#include <gtest/gtest.h>

#include "server/daemon_config.h"

namespace kjit {
namespace {

Status load(const std::string& text) {
  DaemonConfig config;
  return load_config_text(text, "test.toml", config);
}

TEST(DaemonConfig, FloatsWhereIntegersAreWantedAreRefused) {
  for (const char* text : {"[cache]\nmemory_bytes = 2684354e56\n", "compile_workers = -1e300\n",
                           "compile_workers = 2.5\n", "[limits]\nmax_input_bytes = 1e300\n",
                           "[limits]\ncompile_memory_bytes = 4.0\n"}) {
    Status s = load(text);
    ASSERT_FALSE(s) << text << " was accepted";
    EXPECT_NE(s.error().message.find("integer"), std::string::npos) << s.error().message;
  }
}

TEST(DaemonConfig, NumbersBeyondTheirFieldAreRefusedNotCut) {
  Status s = load("[limits]\nmax_headers = 4294967297\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("limits.max_headers"), std::string::npos) << s.error().message;
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("[limits]\nmax_headers = 4294967295\ncompile_open_files = 64\n", "t", config));
  EXPECT_EQ(config.max_headers, 4294967295u);
  EXPECT_EQ(config.compile_bounds.open_files, 64u);
}

TEST(DaemonConfig, SandboxTakesOnlyItsTwoModes) {
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("sandbox = \"off\"\n", "t", config));
  EXPECT_EQ(config.sandbox, "off");
  Status s = load("sandbox = \"none\"\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("sandbox must be"), std::string::npos) << s.error().message;
}

TEST(DaemonConfig, ToolkitPathsAndPolicyAreRead) {
  DaemonConfig config;
  EXPECT_EQ(config.toolkit_policy, ToolkitPolicy::system_first);
  ASSERT_TRUE(load_config_text("toolkit_paths = [\"/opt/venv\", \"/srv/site-packages\"]\ntoolkit_policy = \"newest\"\n",
                               "t", config));
  EXPECT_EQ(config.toolkit_paths, (std::vector<std::string>{"/opt/venv", "/srv/site-packages"}));
  EXPECT_EQ(config.toolkit_policy, ToolkitPolicy::newest);
  Status s = load("toolkit_policy = \"oldest\"\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("toolkit_policy must be"), std::string::npos) << s.error().message;
  EXPECT_FALSE(load("toolkit_paths = \"/opt/venv\"\n"));
  EXPECT_FALSE(load("toolkit_policy = 3\n"));
  EXPECT_FALSE(config.local_toolkit_prefix);
  ASSERT_TRUE(load_config_text("local_toolkit_prefix = \"\"\n", "t", config));
  EXPECT_EQ(config.local_toolkit_prefix, std::string{});
}

}  // namespace
}  // namespace kjit
