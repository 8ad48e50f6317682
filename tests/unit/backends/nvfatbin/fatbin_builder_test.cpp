// Fatbins from the nvFatbin of the CUDA wheels in the project prefix (the
// system toolkit has none). Skipped when install-deps has not installed them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/nvfatbin/fatbin_builder.h"
#include "backends/nvfatbin/nvfatbin_api.h"
#include "backends/nvjitlink/nvjitlink_stage.h"
#include "backends/nvrtc/nvrtc_stage.h"
#include "unit/backends/wheel_toolkit_support.h"
#include "core/compile_job.h"
#include "target/target.h"

namespace kjit {
namespace {

constexpr uint32_t k_fatbin_magic = 0xBA55ED50;  // the fatbin header's first word, little-endian

constexpr const char* k_kernel = R"(
extern "C" __global__ void scale(float* data, float by, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= by;
}
)";

class FatbinBuilder : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    toolkit_ = test::local_wheel_toolkit(why);
    if (!toolkit_) GTEST_SKIP() << why;
    api_ = *toolkit_->nvfatbin();
  }

  std::string ptx_for(const char* target_text) {
    auto target = parse_target(target_text);
    EXPECT_TRUE(target);
    CompileJob job;
    job.input = k_kernel;
    job.input_name = "scale.cu";
    job.target = *target;
    auto ptx = compile_cuda_to_ptx(**toolkit_->nvrtc(), job, {"-arch=" + target->compute_name()});
    EXPECT_TRUE(ptx) << ptx.error().message << "\n" << ptx.error().log;
    return ptx ? ptx->ptx : std::string{};
  }
  std::string cubin_for(const char* target_text) {
    auto target = parse_target(target_text);
    auto cubin = link_ptx_to_cubin(**toolkit_->nvjitlink(), ptx_for(target_text), "scale.ptx",
                                   {"-arch=" + target->sm_name()});
    EXPECT_TRUE(cubin) << cubin.error().message << "\n" << cubin.error().log;
    return cubin ? cubin->cubin : std::string{};
  }

  std::shared_ptr<const CudaToolkit> toolkit_;
  const NvFatbinApi* api_ = nullptr;
};

uint32_t first_word(const std::string& bytes) {
  uint32_t word = 0;
  if (bytes.size() >= sizeof word) std::memcpy(&word, bytes.data(), sizeof word);  // x86-64: little-endian
  return word;
}

TEST_F(FatbinBuilder, TwoCubinsAndPtxMakeOneFatbin) {
  EXPECT_GE(api_->major, 12u);
  const std::string cubin_90 = cubin_for("cuda:90");
  const std::string cubin_107 = cubin_for("cuda:107");
  // Without its terminating NUL, as PTX usually is in kjit's artifacts.
  const std::string ptx_107 = ptx_for("cuda:107");
  ASSERT_FALSE(cubin_90.empty());
  ASSERT_FALSE(cubin_107.empty());
  ASSERT_FALSE(ptx_107.empty());
  ASSERT_NE(ptx_107.back(), '\0');

  auto fatbin = build_fatbin(*api_, {{FatbinPart::Kind::cubin, "90", "scale.sm_90.cubin", cubin_90},
                                     {FatbinPart::Kind::cubin, "107", "scale.sm_107.cubin", cubin_107},
                                     {FatbinPart::Kind::ptx, "107", "scale.compute_107.ptx", ptx_107}});
  ASSERT_TRUE(fatbin) << fatbin.error().message;
  EXPECT_EQ(first_word(*fatbin), k_fatbin_magic);
  EXPECT_GT(fatbin->size(), std::max({cubin_90.size(), cubin_107.size(), ptx_107.size()}));
  EXPECT_GT(fatbin->size(), cubin_90.size() + cubin_107.size());

  // PTX already NUL-terminated goes in as it is.
  const std::string terminated = ptx_107 + '\0';
  auto ptx_only = build_fatbin(*api_, {{FatbinPart::Kind::ptx, "107", "scale.ptx", terminated}});
  ASSERT_TRUE(ptx_only) << ptx_only.error().message;
  EXPECT_EQ(first_word(*ptx_only), k_fatbin_magic);
}

TEST_F(FatbinBuilder, ArchSpecificCubinsKeepTheirSuffix) {
  const std::string cubin_90a = cubin_for("cuda:90a");
  ASSERT_FALSE(cubin_90a.empty());
  auto fatbin = build_fatbin(*api_, {{FatbinPart::Kind::cubin, "90a", "scale.sm_90a.cubin", cubin_90a}});
  ASSERT_TRUE(fatbin) << fatbin.error().message;
  EXPECT_EQ(first_word(*fatbin), k_fatbin_magic);
}

TEST_F(FatbinBuilder, ABadArchIsNamedWithThePart) {
  const std::string cubin_90 = cubin_for("cuda:90");
  auto fatbin = build_fatbin(*api_, {{FatbinPart::Kind::cubin, "banana", "scale.sm_90.cubin", cubin_90}});
  ASSERT_FALSE(fatbin);
  EXPECT_EQ(fatbin.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(fatbin.error().message.find("\"banana\""), std::string::npos) << fatbin.error().message;
  EXPECT_NE(fatbin.error().message.find("scale.sm_90.cubin"), std::string::npos) << fatbin.error().message;

  // A cubin said to be for another SM than its ELF's.
  auto mismatch = build_fatbin(*api_, {{FatbinPart::Kind::cubin, "107", "scale.sm_90.cubin", cubin_90}});
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().message.find("\"107\""), std::string::npos) << mismatch.error().message;

  auto empty = build_fatbin(*api_, {});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace kjit
