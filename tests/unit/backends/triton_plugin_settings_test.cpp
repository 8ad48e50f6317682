// Plugins the configuration gives named Triton builds: which builds get
// them, what is refused (naming the setting and the build), how each enters
// the build's key, and the variables its interpreters start with. No Triton
// needed: builds are descriptions, libraries are files of bytes.
#include "backends/triton/triton_plugin_settings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kjit {
namespace {

namespace fs = std::filesystem;

TritonBuild described_build(const std::string& name, const std::string& loader, bool with_utlx = false) {
  TritonBuild b;
  b.name = name;
  b.distribution = "triton";
  b.version = name.substr(name.rfind('-') + 1);
  b.libtriton_sha256 = "aa";
  b.plugin_loader = loader;
  if (with_utlx) b.installed_plugins.push_back({"triton-utlx", "3.8.0.post16", {{"/env/libutlx.so", "ab", ""}}, "cd"});
  return b;
}

class TritonPluginSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kjit-plugin-settings-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    library_ = (dir_ / "libpasses.so").string();
    std::ofstream(library_) << "not really a library";
    builds_ = {described_build("triton-3.9.0", "extend_with"), described_build("triton-3.8.0", "TRITON_PLUGIN_PATHS", true),
               described_build("fbtriton-3.7.4", "")};
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string library_;
  std::vector<TritonBuild> builds_;
};

TEST_F(TritonPluginSettings, APluginGoesToTheBuildsItNamesAndNoOther) {
  ASSERT_TRUE(configure_triton_plugins(builds_, {{{"triton-3.9.0"}, library_, "", {{"MY_PASS_LEVEL", "2"}}}}));
  ASSERT_EQ(builds_[0].configured_plugins.size(), 1u);
  EXPECT_EQ(builds_[0].configured_plugins[0].library, library_);
  EXPECT_EQ(builds_[0].configured_plugins[0].sha256.size(), 64u);
  EXPECT_TRUE(builds_[1].configured_plugins.empty());
  EXPECT_TRUE(builds_[2].configured_plugins.empty());
  // An extend_with build loads it in each job; its interpreter gets only the variables.
  EXPECT_EQ(builds_[0].job_plugin_libraries(), std::vector<std::string>{library_});
  EXPECT_EQ(builds_[0].interpreter_environment(),
            std::vector<std::string>{R"(KJIT_TRITON_PLUGIN_ENVIRONMENT={"MY_PASS_LEVEL":"2"})"});
  EXPECT_EQ(builds_[0].plugin_names(), std::vector<std::string>{library_});
}

TEST_F(TritonPluginSettings, ATritonPluginPathsBuildLoadsConfiguredLibrariesAtImport) {
  ASSERT_TRUE(configure_triton_plugins(builds_, {{{"triton-3.8.0"}, library_, "", {}}}));
  EXPECT_TRUE(builds_[1].job_plugin_libraries().empty());
  EXPECT_EQ(builds_[1].interpreter_environment(), std::vector<std::string>{"KJIT_TRITON_PLUGIN_LIBRARIES=" + library_});
  EXPECT_EQ(builds_[1].plugin_names(), (std::vector<std::string>{"triton-utlx", library_}));
}

TEST_F(TritonPluginSettings, APackagesVariablesEnterItsKeyComponentAndItsInterpreters) {
  const std::string before = builds_[1].identity();
  const auto components_before = builds_[1].plugin_identities();
  ASSERT_TRUE(configure_triton_plugins(builds_, {{{"triton-3.8.0"}, "", "triton-utlx", {{"UTLX_NO_LAYOUT_PROPAGATION", "1"}}}}));
  const auto components = builds_[1].plugin_identities();
  ASSERT_EQ(components.size(), 1u) << "the settings join the package's own entry";
  EXPECT_EQ(components[0].first, "triton-utlx");
  EXPECT_EQ(components[0].second, components_before[0].second + " UTLX_NO_LAYOUT_PROPAGATION=1");
  EXPECT_NE(builds_[1].identity(), before);
  EXPECT_EQ(builds_[1].core_identity(), described_build("triton-3.8.0", "TRITON_PLUGIN_PATHS").core_identity())
      << "a plugin's settings change its own component, not the build's core";
  EXPECT_EQ(builds_[1].interpreter_environment(),
            std::vector<std::string>{R"(KJIT_TRITON_PLUGIN_ENVIRONMENT={"UTLX_NO_LAYOUT_PROPAGATION":"1"})"});
}

TEST_F(TritonPluginSettings, ALibrarysBytesAreInItsKeyComponent) {
  std::vector<TritonBuild> other = builds_;
  ASSERT_TRUE(configure_triton_plugins(builds_, {{{"triton-3.9.0"}, library_, "", {}}}));
  std::ofstream(library_) << "other bytes";
  ASSERT_TRUE(configure_triton_plugins(other, {{{"triton-3.9.0"}, library_, "", {}}}));
  ASSERT_EQ(builds_[0].plugin_identities().size(), 1u);
  EXPECT_EQ(builds_[0].plugin_identities()[0].first, library_);
  EXPECT_NE(builds_[0].plugin_identities()[0].second, other[0].plugin_identities()[0].second);
  EXPECT_EQ(builds_[0].core_identity(), other[0].core_identity());
}

TEST_F(TritonPluginSettings, RefusalsNameTheSettingAndTheBuild) {
  struct Case {
    TritonPluginSetting setting;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{"triton-9.9.9"}, library_, "", {}},
       "[[triton.plugin]] 1 (library " + library_ + ") is for Triton build 'triton-9.9.9', which is not here"},
      {{{"triton-3.9.0"}, "", "triton-utlx", {}},
       "[[triton.plugin]] 1 (package triton-utlx): Triton build 'triton-3.9.0' has no plugin package triton-utlx"},
      {{{"fbtriton-3.7.4"}, library_, "", {}},
       "Triton build 'fbtriton-3.7.4' loads no pass plugin libraries"},
      {{{"triton-3.9.0"}, (dir_ / "missing.so").string(), "", {}}, "cannot read " + (dir_ / "missing.so").string()},
  };
  for (const Case& c : cases) {
    std::vector<TritonBuild> builds = builds_;
    Status s = configure_triton_plugins(builds, {c.setting});
    ASSERT_FALSE(s) << c.says;
    EXPECT_EQ(s.error().code, ErrorCode::failed_precondition);
    EXPECT_NE(s.error().message.find(c.says), std::string::npos) << s.error().message;
  }
}

TEST_F(TritonPluginSettings, OnlyThePluginsOwnVariablesMayBeSet) {
  EXPECT_TRUE(check_plugin_variable("UTLX_NO_LAYOUT_PROPAGATION"));
  EXPECT_TRUE(check_plugin_variable("_MY_LEVEL2"));
  for (const char* refused : {"", "2FAST", "A-B", "TRITON_PLUGIN_PATHS", "KJIT_TRITON_PLUGIN_ENVIRONMENT",
                              "PYTHONPATH", "LD_PRELOAD", "PATH", "HOME"})
    EXPECT_FALSE(check_plugin_variable(refused)) << refused;
}

}  // namespace
}  // namespace kjit
