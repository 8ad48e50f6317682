// On a machine with an NVIDIA GPU: launches through the daemon's Launch RPC,
// each checked against the host: plain, 200 KiB of dynamic shared memory
// (needs the opt-in attribute), 230 KiB (refused by the planner before any
// driver call), a cluster of 2, and a cooperative launch.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "device_test.h"
#include "kjit/client.h"

namespace kjit::test {
namespace {

constexpr const char* k_kernels = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

// Reverses each block's slice through dynamic shared memory of any size.
extern "C" __global__ void reverse_in_smem(const int* in, int* out, int per_block) {
  extern __shared__ int buffer[];
  const int* src = in + blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) buffer[i] = src[i];
  __syncthreads();
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) out[blockIdx.x * per_block + i] = buffer[per_block - 1 - i];
}

// Each block writes its rank in the cluster.
extern "C" __global__ void cluster_rank(unsigned* out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) out[blockIdx.x] = cluster.block_rank();
}

// Grid-wide sync: every block adds to a counter, then all read the total.
extern "C" __global__ void grid_total(unsigned* counter, unsigned* seen) {
  cg::grid_group grid = cg::this_grid();
  if (threadIdx.x == 0) atomicAdd(counter, 1u);
  grid.sync();
  if (threadIdx.x == 0) seen[blockIdx.x] = atomicAdd(counter, 0u);
}
)";

class GpuLaunchTest : public DeviceDaemonTest {
 protected:
  KernelRef ref(const std::string& kernel) const {
    KernelRef r;
    r.compile.input = k_kernels;
    r.compile.target = target();
    r.kernel = kernel;
    return r;
  }
  static LaunchValue buffer(std::string data, bool back = true) {
    LaunchValue v;
    v.kind = LaunchValue::Kind::buffer;
    v.buffer.data = std::move(data);
    v.buffer.return_contents = back;
    return v;
  }
  static LaunchValue i32(int value) {
    LaunchValue v;
    v.kind = LaunchValue::Kind::i32;
    v.integer = value;
    return v;
  }
  template <typename T>
  static std::string bytes_of(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  template <typename T>
  static std::vector<T> values_of(const std::string& bytes) {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

TEST_F(GpuLaunchTest, PlainLaunchMatchesTheHost) {
  int n = 100000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  LaunchConfig config;
  config.grid = {static_cast<uint32_t>((n + 255) / 256), 1, 1};
  config.block = {256, 1, 1};
  auto result = client().launch(ref("add_one"), config, {buffer(bytes_of(x)), i32(n)});
  ASSERT_TRUE(result) << result.error().message;
  auto out = values_of<float>(result->outputs[0]);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i) + 1.0f) << i;
  std::printf("add_one: %.3f ms\n", result->kernel_ms);
}

TEST_F(GpuLaunchTest, TwoHundredKiBOfDynamicSharedMemoryUsesTheOptInAndIsCorrect) {
  const int per_block = 200 * 1024 / 4, blocks = 4;
  std::vector<int> in(per_block * blocks);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i);
  LaunchValue out = buffer(std::string(in.size() * 4, '\0'));
  LaunchConfig config;
  config.grid = {blocks, 1, 1};
  config.block = {256, 1, 1};
  config.dynamic_shared_bytes = per_block * 4;
  auto result = client().launch(ref("reverse_in_smem"), config, {buffer(bytes_of(in), false), out, i32(per_block)});
  ASSERT_TRUE(result) << result.error().message;
  auto got = values_of<int>(result->outputs[1]);
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < per_block; ++i) ASSERT_EQ(got[b * per_block + i], in[b * per_block + per_block - 1 - i]);
  bool opt_in = false;
  for (const PlannedAttribute& a : result->plan.function_attributes)
    opt_in |= a.name == "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES" && a.values[0] == per_block * 4;
  EXPECT_TRUE(opt_in);
  std::printf("%s", result->plan.description.c_str());
}

TEST_F(GpuLaunchTest, TwoHundredThirtyKiBIsRefusedByThePlanner) {
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {256, 1, 1};
  config.dynamic_shared_bytes = 230 * 1024;
  auto result = client().launch(ref("reverse_in_smem"), config,
                                {buffer(std::string(4, '\0')), buffer(std::string(4, '\0')), i32(1)});
  if (sm_ == 107) GTEST_SKIP() << "sm_107 allows oversized shared memory";
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(result.error().message.find("out of resource: shared memory"), std::string::npos) << result.error().message;
}

TEST_F(GpuLaunchTest, ClusterOfTwoGivesEachBlockItsRank) {
  if (sm_ < 90) GTEST_SKIP() << "clusters need sm_90";
  const uint32_t blocks = 8;
  LaunchConfig config;
  config.grid = {blocks, 1, 1};
  config.block = {32, 1, 1};
  config.cluster = {2, 1, 1};
  auto result = client().launch(ref("cluster_rank"), config, {buffer(std::string(blocks * 4, '\xff'))});
  ASSERT_TRUE(result) << result.error().message;
  auto ranks = values_of<unsigned>(result->outputs[0]);
  for (uint32_t b = 0; b < blocks; ++b) EXPECT_EQ(ranks[b], b % 2) << b;
}

TEST_F(GpuLaunchTest, CooperativeLaunchSynchronizesTheGrid) {
  const uint32_t blocks = 16;
  LaunchConfig config;
  config.grid = {blocks, 1, 1};
  config.block = {64, 1, 1};
  config.cooperative = true;
  auto result =
      client().launch(ref("grid_total"), config, {buffer(std::string(4, '\0')), buffer(std::string(blocks * 4, '\0'))});
  ASSERT_TRUE(result) << result.error().message;
  auto seen = values_of<unsigned>(result->outputs[1]);
  for (uint32_t b = 0; b < blocks; ++b) EXPECT_EQ(seen[b], blocks) << b;
}

}  // namespace
}  // namespace kjit::test
