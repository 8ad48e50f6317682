// The CUDA wheels in the project prefix, for real: a toolkit newer than the
// system one builds for an architecture the system one does not know, with
// the headers kernels include. Skipped when install-deps has not installed
// them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "backends/nvjitlink/nvjitlink_api.h"
#include "backends/nvjitlink/nvjitlink_stage.h"
#include "backends/nvrtc/nvrtc_api.h"
#include "backends/nvrtc/nvrtc_stage.h"
#include "unit/backends/wheel_toolkit_support.h"
#include "core/compile_job.h"
#include "metadata/cubin_reader.h"
#include "target/target.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;

Target target(const char* text) {
  auto parsed = parse_target(text);
  EXPECT_TRUE(parsed) << text;
  return parsed ? *parsed : Target{};
}

// Uses the runtime's and CCCL's headers, so the header set is tested too.
constexpr const char* k_kernel = R"(
#include <cuda_fp16.h>
#include <cuda/std/cstdint>
extern "C" __global__ void halve(__half* data, cuda::std::uint32_t n) {
  cuda::std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = __hmul(data[i], __float2half(0.5f));
}
)";

Result<std::string> cubin_for(const CudaToolkit& toolkit, const Target& target) {
  auto nvrtc = toolkit.nvrtc();
  if (!nvrtc) return nvrtc.error();
  CompileJob job;
  job.input = k_kernel;
  job.input_name = "halve.cu";
  job.target = target;
  std::vector<std::string> options{"-arch=" + target.compute_name()};
  for (const std::string& dir : toolkit.include_dirs()) options.push_back("--include-path=" + dir);
  auto ptx = compile_cuda_to_ptx(**nvrtc, job, options);
  if (!ptx) return ptx.error();
  auto nvjitlink = toolkit.nvjitlink();
  if (!nvjitlink) return nvjitlink.error();
  auto cubin = link_ptx_to_cubin(**nvjitlink, ptx->ptx, "halve.ptx", {"-arch=" + target.sm_name()});
  if (!cubin) return cubin.error();
  return cubin->cubin;
}

TEST(WheelToolkit, NvrtcFromThePrefixBuildsForSm107) {
  std::string why;
  auto toolkit = test::local_wheel_toolkit(why);
  if (!toolkit) GTEST_SKIP() << why;
  EXPECT_EQ((*toolkit->nvrtc())->library_path.rfind(KJIT_TEST_LOCAL_TOOLKIT_PREFIX, 0), 0u)
      << (*toolkit->nvrtc())->library_path;
  // The wheels carry their own headers: nothing is borrowed.
  EXPECT_TRUE(toolkit->notes().size() <= 1) << "only libdevice may come from the system toolkit";
  for (const std::string& dir : toolkit->include_dirs())
    EXPECT_EQ(dir.rfind(toolkit->home(), 0), 0u) << dir;
  ASSERT_TRUE(toolkit->supports(target("cuda:107")));

  auto cubin = cubin_for(*toolkit, target("cuda:107"));
  ASSERT_TRUE(cubin) << cubin.error().message << "\n" << cubin.error().log;
  auto info = read_cubin(*cubin);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->sm, 107u);
  ASSERT_EQ(info->kernels.size(), 1u);
  EXPECT_EQ(info->kernels[0].lowered_name, "halve");
}

TEST(WheelToolkit, SupportFollowsNvrtcThenNvJitLinksVersion) {
  auto system = CudaToolkit::load();
  if (!system->nvrtc() || !system->nvjitlink()) GTEST_SKIP() << "no system CUDA toolkit at " << system->home();
  const std::vector<uint32_t> archs = system->supported_archs();
  const bool lists_107 = std::find(archs.begin(), archs.end(), 107u) != archs.end();
  EXPECT_TRUE(system->supports(target("cuda:90")));
  EXPECT_TRUE(system->supports(target("cuda:90a")));
  EXPECT_EQ(system->supports(target("cuda:107")), lists_107);

  // nvJitLink alone: the version against the table's first CUDA for the SM.
  const fs::path installed = fs::path(system->home()) / "lib64" / "libnvJitLink.so";
  if (!fs::exists(installed)) GTEST_SKIP() << "no " << installed;
  char pattern[] = "/tmp/kjit-nvjitlink-only-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const fs::path home = pattern;
  fs::create_directories(home / "lib");
  fs::create_symlink(fs::canonical(installed), home / "lib" / "libnvJitLink.so.13");
  auto linker_only = CudaToolkit::load(home.string());
  ASSERT_FALSE(linker_only->nvrtc());
  ASSERT_TRUE(linker_only->nvjitlink());
  const std::string version = linker_only->version();
  const unsigned major = std::stoul(version), minor = std::stoul(version.substr(version.find('.') + 1));
  EXPECT_TRUE(linker_only->supports(target("cuda:90")));
  EXPECT_TRUE(linker_only->supports(target("cuda:100f")));  // 12.9 or newer
  EXPECT_EQ(linker_only->supports(target("cuda:107")), major * 100 + minor >= 1304) << version;
  fs::remove_all(home);

  std::string why;
  auto wheel = test::local_wheel_toolkit(why);
  if (!wheel) GTEST_SKIP() << why;
  EXPECT_TRUE(wheel->supports(target("cuda:107")));
  EXPECT_TRUE(wheel->supports(target("cuda:107a")));
  EXPECT_TRUE(wheel->supports(target("cuda:90")));
}

// A worker routes by the facts its daemon handed and loads a toolkit's
// libraries only when a job needs one: the same answers as loading at once,
// and libraries that no longer match the facts are refused, not used.
TEST(WheelToolkit, HandedFactsAnswerUntilFirstUseLoadsTheSameLibraries) {
  std::string why;
  std::shared_ptr<const CudaToolkit> wheel = test::local_wheel_toolkit(why);
  if (!wheel) GTEST_SKIP() << why;
  const ToolkitFacts facts = wheel->facts();
  EXPECT_TRUE(facts.nvrtc && facts.nvjitlink && facts.nvfatbin);

  auto lazy = CudaToolkit::load_on_first_use(wheel->home(), CudaToolkit::load(), facts);
  EXPECT_EQ(lazy->version(), wheel->version());
  EXPECT_EQ(lazy->supported_archs(), wheel->supported_archs());
  EXPECT_EQ(lazy->include_dirs(), wheel->include_dirs());
  EXPECT_TRUE(lazy->supports(target("cuda:107")));
  Result<const NvrtcApi*> nvrtc = lazy->nvrtc();
  ASSERT_TRUE(nvrtc) << nvrtc.error().message;
  EXPECT_EQ((*nvrtc)->library_path, (*wheel->nvrtc())->library_path);
  EXPECT_EQ(lazy->facts(), facts);

  ToolkitFacts stale = facts;
  stale.version = "12.1";
  auto replaced = CudaToolkit::load_on_first_use(wheel->home(), CudaToolkit::load(), stale);
  EXPECT_EQ(replaced->version(), "12.1");  // what keys were made with, until a job needs the libraries
  Result<const NvJitLinkApi*> nvjitlink = replaced->nvjitlink();
  ASSERT_FALSE(nvjitlink);
  EXPECT_EQ(nvjitlink.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(nvjitlink.error().message.find("changed since kjitd found it (12.1 then, " + facts.version + " now)"),
            std::string::npos)
      << nvjitlink.error().message;
  EXPECT_FALSE(replaced->nvrtc());
}

}  // namespace
}  // namespace kjit
