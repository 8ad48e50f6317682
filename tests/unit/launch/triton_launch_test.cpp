// A Triton kernel's launch from Triton's metadata: block from num_warps,
// dynamic shared memory from "shared", clusters from num_ctas (the grid in
// programs), cooperative and PDL as compiled, scratch sizes; then the
// planner's rules, sm_107's oversized shared memory among them.
#include <gtest/gtest.h>

#include "launch/launch_plan.h"
#include "launch/triton_launch.h"
#include "plan_helpers.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_with;
using test::limits_of;

// The fields Triton 3.9 writes that the launch reads, with others around them.
std::string metadata(int num_warps, int num_ctas, uint32_t shared, bool cooperative = false, bool pdl = false,
                     int global_scratch = 0) {
  return R"({"hash": "ab", "target": {"backend": "cuda", "arch": 107, "warp_size": 32}, "num_warps": )" +
         std::to_string(num_warps) + R"(, "num_ctas": )" + std::to_string(num_ctas) + R"(, "num_stages": 3,
      "shared": )" + std::to_string(shared) + R"(, "tmem_size": 0, "global_scratch_size": )" +
         std::to_string(global_scratch) + R"(, "global_scratch_align": 128, "profile_scratch_size": 0,
      "profile_scratch_align": 1, "launch_cooperative_grid": )" + (cooperative ? "true" : "false") +
         R"(, "launch_pdl": )" + (pdl ? "true" : "false") + R"(, "name": "matmul_kernel"})";
}

LaunchConfig grid(uint32_t x) {
  LaunchConfig config;
  config.grid = {x, 1, 1};
  return config;
}

TEST(TritonLaunch, BlockAndSharedMemoryComeFromTheMetadata) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(8, 1, 65536));
  ASSERT_TRUE(triton) << triton.error().message;
  Result<LaunchConfig> config = triton_launch_config(*triton, grid(132), 32);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->block, (Dim3{256, 1, 1}));
  EXPECT_EQ(config->dynamic_shared_bytes, 65536u);
  EXPECT_EQ(config->grid, (Dim3{132, 1, 1}));
  EXPECT_EQ(config->cluster, (Dim3{0, 0, 0}));
  EXPECT_FALSE(config->cooperative);
  // 64 KiB is over the 48 KiB default: the planner opts in, as Triton's loader does.
  Result<LaunchPlan> plan = plan_launch(test::kernel(), limits_of("cuda:90"), *config);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->function_attributes.size(), 1u);
  EXPECT_EQ(plan->function_attributes[0].name, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES");
}

TEST(TritonLaunch, OverTwoHundredTwentyEightKiBOnSm107IsTheOversizedModeWithSpread) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(4, 1, 240 * 1024));
  ASSERT_TRUE(triton);
  Result<LaunchConfig> config = triton_launch_config(*triton, grid(8), 32);
  ASSERT_TRUE(config);
  Result<LaunchPlan> plan = plan_launch(test::kernel(), limits_of("cuda:107"), *config);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->oversized_shared_memory);
  bool mode = false;
  for (const LaunchAttributeSetting& a : plan->launch_attributes) mode |= a.name == "CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE";
  EXPECT_TRUE(mode);
  EXPECT_EQ(plan->function_attributes.front().name, "CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE");
  // sm_90 has no such mode: the same kernel is out of resource there, with the numbers.
  Result<LaunchPlan> on_hopper = plan_launch(test::kernel(), limits_of("cuda:90"), *config);
  EXPECT_TRUE(fails_with(on_hopper, ErrorCode::invalid_argument, "out of resource: shared memory"));
}

TEST(TritonLaunch, NumCtasIsAClusterAndTheGridCountsPrograms) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(4, 2, 1024));
  ASSERT_TRUE(triton);
  Result<LaunchConfig> config = triton_launch_config(*triton, grid(10), 32);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->grid, (Dim3{20, 1, 1}));
  EXPECT_EQ(config->cluster, (Dim3{2, 1, 1}));
  Result<LaunchPlan> plan = plan_launch(test::kernel(), limits_of("cuda:90"), *config);
  ASSERT_TRUE(plan) << plan.error().message;
  std::vector<std::string> names;
  for (const LaunchAttributeSetting& a : plan->launch_attributes) names.push_back(a.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"), names.end());
}

TEST(TritonLaunch, CooperativeAndPdlAsCompiled) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(4, 1, 0, true, true));
  ASSERT_TRUE(triton);
  Result<LaunchConfig> config = triton_launch_config(*triton, grid(4), 32);
  ASSERT_TRUE(config);
  EXPECT_TRUE(config->cooperative);
  EXPECT_TRUE(config->programmatic_dependent_launch);
  Result<LaunchPlan> plan = plan_launch(test::kernel(), limits_of("cuda:90"), *config);
  ASSERT_TRUE(plan) << plan.error().message;
  std::vector<std::string> names;
  for (const LaunchAttributeSetting& a : plan->launch_attributes) names.push_back(a.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "CU_LAUNCH_ATTRIBUTE_COOPERATIVE"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"), names.end());
}

TEST(TritonLaunch, AWarpOf64OnAmd) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(4, 1, 0));
  ASSERT_TRUE(triton);
  Result<LaunchConfig> config = triton_launch_config(*triton, grid(4), 64);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->block, (Dim3{256, 1, 1}));
}

TEST(TritonLaunch, ACallerThatDisagreesWithTheKernelIsRefused) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(8, 2, 4096));
  ASSERT_TRUE(triton);
  LaunchConfig block = grid(4);
  block.block = {128, 1, 1};
  EXPECT_TRUE(fails_with(triton_launch_config(*triton, block, 32), ErrorCode::invalid_argument, "num_warps=8"));
  LaunchConfig shared = grid(4);
  shared.dynamic_shared_bytes = 100;
  EXPECT_TRUE(fails_with(triton_launch_config(*triton, shared, 32), ErrorCode::invalid_argument, "4096 bytes"));
  LaunchConfig cluster = grid(4);
  cluster.cluster = {4, 1, 1};
  EXPECT_TRUE(fails_with(triton_launch_config(*triton, cluster, 32), ErrorCode::invalid_argument, "clusters of 2"));
  // Agreeing with it is fine.
  LaunchConfig same = grid(4);
  same.block = {256, 0, 0};
  same.dynamic_shared_bytes = 4096;
  same.cluster = {2, 1, 1};
  EXPECT_TRUE(triton_launch_config(*triton, same, 32));
}

TEST(TritonLaunch, ScratchIsPerProgramTimesCtas) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(4, 2, 0, false, false, 256));
  ASSERT_TRUE(triton);
  EXPECT_EQ(triton->global_scratch_size, 256u);
  EXPECT_EQ(triton->global_scratch_align, 128u);
  EXPECT_EQ(triton_scratch_bytes(triton->global_scratch_size, {3, 2, 0}, triton->num_ctas), 256u * 6 * 2);
  EXPECT_EQ(triton_scratch_bytes(0, {3, 2, 1}, 2), 0u);
}

TEST(TritonLaunch, ScratchArgumentsFillTheParameterBlockAfterTheCallers) {
  Result<TritonLaunch> triton = read_triton_launch(metadata(4, 1, 0, false, false, 64));
  ASSERT_TRUE(triton);
  // softmax(out, in, stride, n): 8 + 8 + 4 + 4 bytes, then two pointers = 40.
  EXPECT_EQ(triton_scratch_arguments(*triton, 40, 24, {10, 1, 1}), (std::vector<uint64_t>{640, 0}));
  // One i32 last: the pointers start at the next 8 bytes.
  EXPECT_EQ(triton_scratch_arguments(*triton, 32, 12, {1, 1, 1}), (std::vector<uint64_t>{64, 0}));
  // An older build's single global scratch pointer.
  EXPECT_EQ(triton_scratch_arguments(*triton, 32, 24, {2, 1, 1}), (std::vector<uint64_t>{128}));
  // The caller gave them, or the gap is no pointer pair: nothing appended.
  EXPECT_TRUE(triton_scratch_arguments(*triton, 40, 40, {1, 1, 1}).empty());
  EXPECT_TRUE(triton_scratch_arguments(*triton, 64, 24, {1, 1, 1}).empty());
  EXPECT_TRUE(triton_scratch_arguments(*triton, 0, 24, {1, 1, 1}).empty());
}

TEST(TritonLaunch, MalformedMetadataIsRefusedNamingTheField) {
  EXPECT_TRUE(fails_with(read_triton_launch("not json"), ErrorCode::invalid_argument, "not a JSON object"));
  EXPECT_TRUE(fails_with(read_triton_launch(R"({"shared": 0})"), ErrorCode::invalid_argument, "num_warps"));
  EXPECT_TRUE(fails_with(read_triton_launch(R"({"num_warps": 4, "shared": -1})"), ErrorCode::invalid_argument, "shared"));
  EXPECT_TRUE(fails_with(read_triton_launch(R"({"num_warps": 4, "num_ctas": 99})"), ErrorCode::invalid_argument, "num_ctas"));
}

}  // namespace
}  // namespace kjit
