// A toolkit laid out as NVIDIA's Python wheels lay it out (nvidia/cu13/lib,
// no lib64) loads like an installed one.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "backends/cuda_toolkit.h"
#include "backends/dynamic_library.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

TEST(ToolkitLayout, CandidatesCoverLib64ThenLibThenTheLoader) {
  const std::vector<std::string> found = toolkit_library_candidates("/opt/tk", "libnvrtc", true);
  const auto at = [&](const std::string& path) { return std::find(found.begin(), found.end(), path) - found.begin(); };
  EXPECT_LT(at("/opt/tk/lib64/libnvrtc.so"), at("/opt/tk/lib/libnvrtc.so.13"));
  EXPECT_LT(at("/opt/tk/lib/libnvrtc.so.13"), at("libnvrtc.so.13"));
  EXPECT_LT(at("libnvrtc.so.13"), static_cast<long>(found.size()));
  EXPECT_EQ(std::count(found.begin(), found.end(), "libnvrtc.so"), 1);
  const std::vector<std::string> home_only = toolkit_library_candidates("/opt/tk", "libnvrtc", false);
  EXPECT_TRUE(std::all_of(home_only.begin(), home_only.end(),
                          [](const std::string& path) { return path.starts_with("/opt/tk/"); }));
}

TEST(ToolkitLayout, AWheelStyleLibDirectoryLoadsNvrtcAndNvJitLink) {
  const fs::path installed = fs::path(CudaToolkit::load()->home()) / "lib64";
  if (!fs::exists(installed / "libnvrtc.so") || !fs::exists(installed / "libnvJitLink.so"))
    GTEST_SKIP() << "no CUDA toolkit with NVRTC and nvJitLink at " << installed;
  char pattern[] = "/tmp/kjit-wheel-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const fs::path home = pattern;
  fs::create_directories(home / "lib");
  // The wheels ship versioned names only.
  fs::create_symlink(fs::canonical(installed / "libnvrtc.so"), home / "lib" / "libnvrtc.so.13");
  fs::create_symlink(fs::canonical(installed / "libnvJitLink.so"), home / "lib" / "libnvJitLink.so.13");
  auto toolkit = CudaToolkit::load(home.string());
  EXPECT_TRUE(toolkit->nvrtc()) << toolkit->nvrtc().error().message;
  EXPECT_TRUE(toolkit->nvjitlink()) << toolkit->nvjitlink().error().message;
  fs::remove_all(home);
}

}  // namespace
}  // namespace kjit
