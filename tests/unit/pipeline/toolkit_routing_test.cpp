// Routing over real toolkits: the system CUDA toolkit, and NVIDIA's wheels in
// the project's prefix when scripts/install-deps.sh has installed them.
#include "pipeline/toolkit_routing.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "backends/toolkit_discovery.h"

namespace kjit {
namespace {

Target t(std::string_view text) { return parse_target(text).value(); }

std::shared_ptr<const CudaToolkit> system_toolkit() { return CudaToolkit::load(); }

// The newest wheel toolkit in the project's prefix, or null.
std::shared_ptr<const CudaToolkit> wheel_toolkit(const std::shared_ptr<const CudaToolkit>& system) {
  std::string prefix = default_local_toolkit_prefix();
  if (prefix.empty()) return nullptr;
  std::vector<std::string> homes = wheel_toolkit_homes(prefix);
  if (homes.empty()) return nullptr;
  auto toolkit = CudaToolkit::load(homes.front(), system);
  return toolkit->nvrtc() ? toolkit : nullptr;
}

TEST(ToolkitRoutingTest, VersionsCompareByNumberNotText) {
  auto none = CudaToolkit::load("/nonexistent/cuda");
  auto system = system_toolkit();
  if (!system->nvrtc()) GTEST_SKIP() << "no system CUDA toolkit";
  EXPECT_TRUE(toolkit_newer(*system, *none));
  EXPECT_FALSE(toolkit_newer(*none, *system));
  EXPECT_FALSE(toolkit_newer(*system, *system));
}

TEST(ToolkitRoutingTest, PolicySpellings) {
  EXPECT_EQ(parse_toolkit_policy("system-first"), ToolkitPolicy::system_first);
  EXPECT_EQ(parse_toolkit_policy("newest"), ToolkitPolicy::newest);
  EXPECT_FALSE(parse_toolkit_policy("oldest"));
  EXPECT_EQ(to_string(ToolkitPolicy::newest), "newest");
}

TEST(ToolkitRoutingTest, AToolkitThatLoadedNothingIsNeverChosen) {
  auto system = system_toolkit();
  if (!system->nvrtc()) GTEST_SKIP() << "no system CUDA toolkit";
  ToolkitRouting routing(system, {{"wheel", CudaToolkit::load("/nonexistent/cuda"), {}}}, {}, ToolkitPolicy::newest);
  EXPECT_EQ(routing.for_target(t("cuda:90")).toolkit, system);
  EXPECT_EQ(routing.for_target(t("cuda:90")).origin, "system");
}

TEST(ToolkitRoutingTest, ATargetNoToolkitSupportsGoesToTheSystemToolkit) {
  auto system = system_toolkit();
  if (!system->nvrtc()) GTEST_SKIP() << "no system CUDA toolkit";
  if (system->supports(t("cuda:107"))) GTEST_SKIP() << "the system toolkit builds sm_107";
  ToolkitRouting routing(system, {}, {}, ToolkitPolicy::system_first);
  EXPECT_EQ(routing.for_target(t("cuda:107")).toolkit, system);
  EXPECT_EQ(routing.reason(t("cuda:107")), "no toolkit supports sm_107");
}

TEST(ToolkitRoutingTest, SystemFirstKeepsTheSystemToolkitAndSendsWhatItCannotBuildToTheWheel) {
  auto system = system_toolkit();
  auto wheel = wheel_toolkit(system);
  if (!system->nvrtc() || !wheel) GTEST_SKIP() << "needs the system toolkit and the wheels (scripts/install-deps.sh)";
  if (system->supports(t("cuda:107"))) GTEST_SKIP() << "the system toolkit builds sm_107";
  ASSERT_TRUE(wheel->supports(t("cuda:107")));
  ToolkitRouting routing(system, {{"local", wheel, {}}}, {}, ToolkitPolicy::system_first);
  EXPECT_EQ(routing.for_target(t("cuda:90")).toolkit, system);
  EXPECT_EQ(routing.for_target(t("cuda:107")).toolkit, wheel);
  EXPECT_EQ(routing.reason(t("cuda:107")), "the newest toolkit that supports sm_107");
  EXPECT_EQ(routing.reason(t("cuda:90")), "the system toolkit supports sm_90");
}

TEST(ToolkitRoutingTest, NewestSendsEveryTargetTheNewerToolkitSupportsToIt) {
  auto system = system_toolkit();
  auto wheel = wheel_toolkit(system);
  if (!system->nvrtc() || !wheel) GTEST_SKIP() << "needs the system toolkit and the wheels (scripts/install-deps.sh)";
  ASSERT_TRUE(toolkit_newer(*wheel, *system));
  ToolkitRouting routing(system, {{"local", wheel, {}}}, {}, ToolkitPolicy::newest);
  EXPECT_EQ(routing.for_target(t("cuda:90")).toolkit, wheel);
  EXPECT_EQ(routing.for_target(t("cuda:107")).toolkit, wheel);
}

TEST(ToolkitRoutingTest, APinnedRangeWinsOverThePolicy) {
  auto system = system_toolkit();
  auto wheel = wheel_toolkit(system);
  if (!system->nvrtc() || !wheel) GTEST_SKIP() << "needs the system toolkit and the wheels (scripts/install-deps.sh)";
  // The system toolkit pinned to sm_90 under "newest": the pin holds.
  ToolkitRouting routing(system, {{"local", wheel, {}}}, {{"configured", system, TargetRange{90, 90}}},
                         ToolkitPolicy::newest);
  EXPECT_EQ(routing.for_target(t("cuda:90")).origin, "configured");
  EXPECT_EQ(routing.for_target(t("cuda:100")).toolkit, wheel);
  EXPECT_EQ(routing.reason(t("cuda:90")), "pinned by [[toolkits]] " + (TargetRange{90, 90}).describe());
}

TEST(ToolkitRoutingTest, FatbinsAreCombinedByTheNewestToolkitWithNvFatbin) {
  auto system = system_toolkit();
  auto wheel = wheel_toolkit(system);
  if (!wheel || !wheel->nvfatbin()) GTEST_SKIP() << "needs the nvFatbin wheel (scripts/install-deps.sh)";
  ToolkitRouting routing(system, {{"local", wheel, {}}}, {}, ToolkitPolicy::system_first);
  ASSERT_NE(routing.fatbin_toolkit(), nullptr);
  EXPECT_EQ(routing.fatbin_toolkit()->toolkit, wheel);
  EXPECT_EQ(routing.fatbin_toolkit()->describe(), wheel->version() + " (local: " + wheel->home() + ")");
}

TEST(ToolkitRoutingTest, WithoutNvFatbinThereIsNoFatbinToolkit) {
  ToolkitRouting routing(CudaToolkit::load("/nonexistent/cuda"), {}, {}, ToolkitPolicy::system_first);
  EXPECT_EQ(routing.fatbin_toolkit(), nullptr);
}

}  // namespace
}  // namespace kjit
