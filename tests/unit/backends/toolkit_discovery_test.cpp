// Finding CUDA toolkits among NVIDIA's Python wheels, over fake directory
// trees (the libraries in them are empty files: discovery only looks at
// names, and a toolkit whose libraries do not load still lists), and what a
// wheel toolkit borrows from the system toolkit.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "backends/toolkit_discovery.h"
#include "target/target.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kjit-discovery-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
  }
  void TearDown() override { fs::remove_all(root_); }

  // An empty file at root/relative, directories made as needed.
  fs::path touch(const std::string& relative) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path).put('\0');
    return path;
  }
  fs::path dir(const std::string& relative) {
    fs::create_directories(root_ / relative);
    return root_ / relative;
  }
  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  fs::path root_;
};

std::vector<std::string> homes_of(const std::vector<DiscoveredToolkit>& found) {
  std::vector<std::string> homes;
  for (const DiscoveredToolkit& toolkit : found) homes.push_back(toolkit.origin + " " + toolkit.home);
  return homes;
}

using WheelHomes = TempTree;

TEST_F(WheelHomes, EachAcceptedFormFindsTheCuDirectories) {
  touch("env/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
  touch("site/nvidia/cu12/lib/libnvJitLink.so.12");
  touch("site/nvidia/cu13/lib/libnvfatbin.so.13");
  touch("site/nvidia/cu13/include/nvFatbin.h");

  EXPECT_EQ(wheel_toolkit_homes(path("env")),
            std::vector<std::string>{path("env/lib/python3.12/site-packages/nvidia/cu13")});
  // Newest CUDA major first.
  EXPECT_EQ(wheel_toolkit_homes(path("site")),
            (std::vector<std::string>{path("site/nvidia/cu13"), path("site/nvidia/cu12")}));
  EXPECT_EQ(wheel_toolkit_homes(path("site/nvidia")),
            (std::vector<std::string>{path("site/nvidia/cu13"), path("site/nvidia/cu12")}));
  EXPECT_EQ(wheel_toolkit_homes(path("site/nvidia/cu12")), std::vector<std::string>{path("site/nvidia/cu12")});
  EXPECT_EQ(python_env_cuda_dirs(path("env")),
            std::vector<std::string>{path("env/lib/python3.12/site-packages/nvidia/cu13")});
  touch("debian/lib/python3.11/dist-packages/nvidia/cu13/lib/libnvrtc.so.13");
  EXPECT_EQ(wheel_toolkit_homes(path("debian")),
            std::vector<std::string>{path("debian/lib/python3.11/dist-packages/nvidia/cu13")});
}

TEST_F(WheelHomes, WhatHoldsNoToolkitLibraryIsNone) {
  touch("headers-only/nvidia/cu13/include/cuda_runtime.h");
  touch("runtime-only/nvidia/cu13/lib/libcudart.so.13");
  // CUDA 12's wheels: one directory per package, not one toolkit home.
  touch("cuda12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  touch("python2/lib/python2.7/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
  dir("empty");
  for (const char* where : {"headers-only", "runtime-only", "cuda12", "python2", "empty", "missing"})
    EXPECT_EQ(wheel_toolkit_homes(path(where)), std::vector<std::string>{}) << where;
  EXPECT_EQ(python_env_cuda_dirs(path("missing")), std::vector<std::string>{});
}

using Discovery = TempTree;

TEST_F(Discovery, TheSystemToolkitComesFirstThenWheelsThenTheLocalPrefixEachOnce) {
  touch("sys/include/cuda_runtime.h");
  touch("env/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
  touch("site/nvidia/cu13/lib/libnvJitLink.so.13");
  touch("local/nvidia/cu13/lib/libnvfatbin.so.13");
  fs::create_directory_symlink(root_ / "site", root_ / "site-link");

  ToolkitSearch search;
  search.system_home = path("sys");
  search.wheel_paths = {path("missing"),
                        path("env"),
                        path("env/lib/python3.11/site-packages/nvidia/cu13"),  // the same home again
                        path("site-link"),
                        path("site"),  // the same home through a symlink
                        path("sys"),   // the system toolkit is no wheel
                        path("local")};
  search.local_prefix = path("local");  // already found as a wheel path
  std::vector<DiscoveredToolkit> found = discover_cuda_toolkits(search);
  EXPECT_EQ(homes_of(found), (std::vector<std::string>{
                                 "system " + path("sys"),
                                 "wheel " + path("env/lib/python3.11/site-packages/nvidia/cu13"),
                                 "wheel " + path("site-link/nvidia/cu13"),
                                 "wheel " + path("local/nvidia/cu13"),
                             }));
  for (const DiscoveredToolkit& toolkit : found) {
    ASSERT_NE(toolkit.toolkit, nullptr);
    EXPECT_EQ(toolkit.toolkit->home(), toolkit.home);
  }

  search.wheel_paths.clear();
  EXPECT_EQ(homes_of(discover_cuda_toolkits(search)),
            (std::vector<std::string>{"system " + path("sys"), "local " + path("local/nvidia/cu13")}));
}

// A worker loads the toolkits its daemon discovered, in the daemon's order,
// without searching: a wheel installed since the daemon started is not
// among them, where a search of its own would find it.
TEST_F(Discovery, HandedHomesLoadAsDiscoveredWithoutASearch) {
  touch("sys/include/cuda_runtime.h");
  touch("env/nvidia/cu13/lib/libnvrtc.so.13");
  ToolkitSearch search;
  search.system_home = path("sys");
  search.wheel_paths = {path("env")};
  search.local_prefix = "";
  const std::vector<DiscoveredToolkit> found = discover_cuda_toolkits(search);
  ASSERT_EQ(found.size(), 2u);
  touch("env/nvidia/cu12/lib/libnvrtc.so.12");  // installed later
  ASSERT_EQ(discover_cuda_toolkits(search).size(), 3u);

  const std::vector<DiscoveredToolkit> loaded = load_cuda_toolkits(search.system_home, {{"wheel", found[1].home}});
  EXPECT_EQ(homes_of(loaded), homes_of(found));
  // What a worker borrows from the system toolkit is what the daemon's did.
  EXPECT_EQ(loaded[1].toolkit->include_dirs(), found[1].toolkit->include_dirs());
}

TEST_F(Discovery, TheSystemToolkitIsListedEvenWhenNothingLoads) {
  ToolkitSearch search;
  search.system_home = path("nothing-here");
  search.local_prefix = "";
  std::vector<DiscoveredToolkit> found = discover_cuda_toolkits(search);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].origin, "system");
  EXPECT_EQ(found[0].home, path("nothing-here"));
  EXPECT_FALSE(found[0].toolkit->nvrtc());
  EXPECT_FALSE(found[0].toolkit->nvjitlink());
  EXPECT_FALSE(found[0].toolkit->nvfatbin());
  EXPECT_NE(found[0].toolkit->nvfatbin().error().message.find("nvFatbin is not available"), std::string::npos);
  EXPECT_EQ(found[0].toolkit->version(), "none");
}

TEST_F(Discovery, WheelToolkitsBorrowWhatTheyLackFromTheSystemToolkit) {
  touch("sys/include/cuda_runtime.h");
  dir("sys/include/cccl/cuda/std");
  touch("sys/nvvm/libdevice/libdevice.10.bc");
  touch("site/nvidia/cu13/lib/libnvrtc.so.13");
  touch("site/nvidia/cu13/include/nvrtc.h");
  ToolkitSearch search{.system_home = path("sys"), .wheel_paths = {path("site")}, .local_prefix = ""};
  std::vector<DiscoveredToolkit> found = discover_cuda_toolkits(search);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].toolkit->include_dirs(),
            (std::vector<std::string>{path("sys/include"), path("sys/include/cccl")}));
  EXPECT_EQ(found[1].toolkit->include_dirs(), found[0].toolkit->include_dirs());
  EXPECT_EQ(found[1].toolkit->libdevice_path(), path("sys/nvvm/libdevice/libdevice.10.bc"));
  EXPECT_TRUE(found[0].toolkit->notes().empty());
  EXPECT_EQ(found[1].toolkit->notes().size(), 3u);
}

using HeaderFallback = TempTree;

TEST_F(HeaderFallback, AHomeWithoutHeadersTakesTheFallbacksAndSaysSo) {
  touch("sys/include/cuda_runtime.h");
  dir("sys/include/cccl/cuda/std");
  touch("sys/nvvm/libdevice/libdevice.10.bc");
  touch("wheel/include/nvrtc.h");
  auto system = CudaToolkit::load(path("sys"));
  auto wheel = CudaToolkit::load(path("wheel"), system);
  EXPECT_EQ(wheel->include_dirs(), (std::vector<std::string>{path("sys/include"), path("sys/include/cccl")}));
  EXPECT_EQ(wheel->libdevice_path(), path("sys/nvvm/libdevice/libdevice.10.bc"));
  ASSERT_EQ(wheel->notes().size(), 3u);
  for (const std::string& note : wheel->notes()) {
    EXPECT_NE(note.find(path("sys")), std::string::npos) << note;
    EXPECT_NE(note.find(path("wheel") + " has none"), std::string::npos) << note;
  }
  EXPECT_NE(wheel->notes()[0].find("CUDA headers"), std::string::npos) << wheel->notes()[0];
  EXPECT_NE(wheel->notes()[1].find("CCCL"), std::string::npos) << wheel->notes()[1];
  EXPECT_NE(wheel->notes()[2].find("libdevice"), std::string::npos) << wheel->notes()[2];
}

TEST_F(HeaderFallback, OwnHeadersWinAndOnlyTheMissingPartIsBorrowed) {
  touch("sys/include/cuda_runtime.h");
  dir("sys/include/cccl/cuda/std");
  auto system = CudaToolkit::load(path("sys"));

  // The crt wheel without the CCCL wheel.
  touch("crt-only/include/crt/host_defines.h");
  auto crt_only = CudaToolkit::load(path("crt-only"), system);
  EXPECT_EQ(crt_only->include_dirs(), (std::vector<std::string>{path("crt-only/include"), path("sys/include/cccl")}));
  ASSERT_EQ(crt_only->notes().size(), 1u);
  EXPECT_NE(crt_only->notes()[0].find("CCCL"), std::string::npos);

  // CCCL in include/cccl (the nvidia-cuda-cccl wheel) and in include itself.
  touch("full/include/cuda_runtime.h");
  dir("full/include/cccl/cuda/std");
  auto full = CudaToolkit::load(path("full"), system);
  EXPECT_EQ(full->include_dirs(), (std::vector<std::string>{path("full/include"), path("full/include/cccl")}));
  EXPECT_TRUE(full->notes().empty());
  touch("flat/include/crt/host_defines.h");
  dir("flat/include/cuda/std");
  auto flat = CudaToolkit::load(path("flat"), system);
  EXPECT_EQ(flat->include_dirs(), std::vector<std::string>{path("flat/include")});
  EXPECT_TRUE(flat->notes().empty());

  // CCCL alone: the CUDA headers are borrowed, its own CCCL kept.
  dir("cccl-only/include/cccl/cuda/std");
  auto cccl_only = CudaToolkit::load(path("cccl-only"), system);
  EXPECT_EQ(cccl_only->include_dirs(), (std::vector<std::string>{path("sys/include"), path("cccl-only/include/cccl")}));
}

TEST_F(HeaderFallback, WithoutAFallbackMissingHeadersAreANote) {
  touch("wheel/include/nvrtc.h");
  auto wheel = CudaToolkit::load(path("wheel"));
  // What there is stays, as for any toolkit.
  EXPECT_EQ(wheel->include_dirs(), std::vector<std::string>{path("wheel/include")});
  EXPECT_EQ(wheel->libdevice_path(), "");
  ASSERT_EQ(wheel->notes().size(), 1u);
  EXPECT_NE(wheel->notes()[0].find("no CUDA headers"), std::string::npos) << wheel->notes()[0];
}

TEST_F(HeaderFallback, AToolkitWithoutLibrariesSupportsNoTarget) {
  auto empty = CudaToolkit::load(path("empty"));
  for (const char* text : {"cuda:75", "cuda:90a", "cuda:107", "cuda:100f"}) {
    auto target = parse_target(text);
    ASSERT_TRUE(target) << text;
    EXPECT_FALSE(empty->supports(*target)) << text;
  }
}

}  // namespace
}  // namespace kjit
