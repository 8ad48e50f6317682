// The PTX reader on what nvcc emits (the same NVVM as NVRTC), checked kernel
// by kernel against the cubin reader on the cubin ptxas assembled from that
// PTX at build time: both must describe the same launch needs.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "metadata/cubin_reader.h"
#include "metadata/ptx_reader.h"

namespace kjit {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Fixture {
  Result<PtxModule> ptx = read_ptx(read_file(KJIT_TEST_FIXTURE_PTX));
  std::string cubin_bytes = read_file(KJIT_TEST_FIXTURE_CUBIN);
  Result<CubinInfo> cubin = read_cubin(cubin_bytes);
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

const KernelInfo* cubin_kernel(const CubinInfo& cubin, std::string_view lowered_name) {
  for (const KernelInfo& kernel : cubin.kernels) {
    if (kernel.lowered_name == lowered_name) return &kernel;
  }
  return nullptr;
}

TEST(PtxReaderOnNvccOutput, FindsEveryKernelTheCubinHas) {
  const Fixture& f = fixture();
  ASSERT_TRUE(f.ptx.ok()) << f.ptx.error().message;
  ASSERT_TRUE(f.cubin.ok()) << f.cubin.error().message;
  EXPECT_EQ(f.ptx->target, "sm_90");
  EXPECT_EQ(f.ptx->kernels.size(), f.cubin->kernels.size());
  for (const char* name : {"bounded", "clustered", "mixed_params", "uses_helper", "also_uses_helper", "scale<float>"}) {
    EXPECT_NE(f.ptx->find(name), nullptr) << name;
  }
}

TEST(PtxReaderOnNvccOutput, AgreesWithTheCubinReaderOnEachKernel) {
  const Fixture& f = fixture();
  ASSERT_TRUE(f.ptx.ok() && f.cubin.ok());
  for (const PtxKernel& kernel : f.ptx->kernels) {
    const KernelInfo& from_ptx = kernel.info;
    SCOPED_TRACE(from_ptx.lowered_name);
    const KernelInfo* from_cubin = cubin_kernel(*f.cubin, from_ptx.lowered_name);
    ASSERT_NE(from_cubin, nullptr);
    EXPECT_EQ(from_ptx.name, from_cubin->name);
    EXPECT_EQ(from_ptx.static_shared_bytes, from_cubin->static_shared_bytes);
    EXPECT_EQ(from_ptx.shared_section_bytes, from_cubin->shared_section_bytes);
    EXPECT_EQ(from_ptx.max_threads_per_block, from_cubin->max_threads_per_block);
    EXPECT_EQ(from_ptx.cluster_dims, from_cubin->cluster_dims);
    EXPECT_EQ(from_ptx.param_bytes, from_cubin->param_bytes);
  }
}

// The figures themselves, so that both readers being wrong the same way fails.
TEST(PtxReaderOnNvccOutput, ReadsTheFixturesLaunchNeeds) {
  const Fixture& f = fixture();
  ASSERT_TRUE(f.ptx.ok()) << f.ptx.error().message;
  // float[1024] + double[3], rounded to 16 because the module declares
  // dynamic shared memory: ptxas -v says 4128.
  EXPECT_EQ(f.ptx->find("bounded")->info.static_shared_bytes, 4128u);
  EXPECT_EQ(f.ptx->find("bounded")->info.max_threads_per_block, 256u);
  EXPECT_EQ(f.ptx->find("bounded")->info.param_bytes, 24u);
  EXPECT_EQ(f.ptx->find("clustered")->info.cluster_dims, (Dim3{2, 1, 1}));
  EXPECT_TRUE(f.ptx->find("clustered")->explicit_cluster);
  EXPECT_EQ(f.ptx->find("clustered")->info.static_shared_bytes, 0u);
  EXPECT_EQ(f.ptx->find("mixed_params")->info.max_registers, 40u);
  EXPECT_EQ(f.ptx->find("mixed_params")->info.param_bytes, 32u);
  // shared_table (128 bytes) reached through lookup(): 128; with a 20-byte
  // local array first: 148, rounded to 160.
  EXPECT_EQ(f.ptx->find("uses_helper")->info.static_shared_bytes, 128u);
  EXPECT_EQ(f.ptx->find("also_uses_helper")->info.static_shared_bytes, 160u);
}

}  // namespace
}  // namespace kjit
