// The planner's shape rules: blocks against launch bounds, clusters,
// cooperative grids, dependent launch, priority, and every attribute at once.
#include <gtest/gtest.h>

#include "launch/launch_plan.h"
#include "plan_helpers.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_with;
using test::kernel;
using test::limits_of;
using test::shape;

bool has_note(const LaunchPlan& plan, std::string_view text) {
  for (const auto& note : plan.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

using FA = FunctionAttributeSetting;
using LA = LaunchAttributeSetting;

TEST(LaunchPlanner, MissingGridAndBlockDimensionsMeanOne) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({8, 2}, {32, 4}));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->grid, (Dim3{8, 2, 1}));
  EXPECT_EQ(plan->block, (Dim3{32, 4, 1}));
}

TEST(LaunchPlanner, EmptyGridIsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({}, {32}));
  ASSERT_TRUE(fails_with(plan, ErrorCode::invalid_argument, "grid (0,0,0) has no blocks"));
}

TEST(LaunchPlanner, BlockOverDeviceMaximumIsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({1}, {64, 32}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "block (64,32,1) has 2048 threads, more than the 1024 per block on sm_90");
}

TEST(LaunchPlanner, BlockDimensionOverItsOwnMaximumIsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({1}, {1, 1, 128}));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("(1024,1024,64)"), std::string::npos);
}

TEST(LaunchPlanner, BlockOverKernelLaunchBoundsIsError) {
  KernelInfo bounded = kernel();
  bounded.max_threads_per_block = 256;
  EXPECT_TRUE(plan_launch(bounded, limits_of("cuda:90"), shape({1}, {256})).ok());
  auto plan = plan_launch(bounded, limits_of("cuda:90"), shape({1}, {512}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(
      plan.error().message,
      "block (512,1,1) has 512 threads, more than the 256 kernel k was compiled for (__launch_bounds__ / .maxntid)");
}

TEST(LaunchPlanner, BlockMustMatchRequiredThreads) {
  KernelInfo required = kernel();
  required.required_threads = {128, 1, 1};
  EXPECT_TRUE(plan_launch(required, limits_of("cuda:90"), shape({1}, {128})).ok());
  auto plan = plan_launch(required, limits_of("cuda:90"), shape({1}, {64, 2}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "block (64,2,1) does not match the block (128,1,1) kernel k requires (.reqntid)");
}

TEST(LaunchPlanner, ClusterOfTwoSetsDimensionAndSpread) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({8}, {128}, {2}));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->function_attributes.empty());
  EXPECT_EQ(plan->launch_attributes,
            (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", 4, {2, 1, 1}},
                             {"CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE", 5, {1}}}));
}

TEST(LaunchPlanner, ClusterOfEightIsPortable) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({16, 2}, {128}, {4, 2}));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->function_attributes.empty());
  EXPECT_EQ(plan->launch_attributes[0], (LA{"CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", 4, {4, 2, 1}}));
}

TEST(LaunchPlanner, ClusterOfSixteenSetsNonPortableSizeAllowed) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({32}, {128}, {16}));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->function_attributes,
            (std::vector<FA>{{"CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14, 1}}));
  EXPECT_EQ(plan->launch_attributes,
            (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", 4, {16, 1, 1}},
                             {"CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE", 5, {1}}}));
}

TEST(LaunchPlanner, ClusterOfSixteenOnSm120IsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:120"), shape({32}, {128}, {16}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "cluster (16,1,1) has 16 blocks, more than the 8 sm_120 allows");
}

TEST(LaunchPlanner, ClusterOverTheKernelsMaxClusterRankIsError) {
  KernelInfo ranked = kernel();
  ranked.max_cluster_rank = 4;
  EXPECT_TRUE(plan_launch(ranked, limits_of("cuda:90"), shape({8}, {128}, {4})).ok());
  auto plan = plan_launch(ranked, limits_of("cuda:90"), shape({8}, {128}, {8}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(plan.error().message, "cluster (8,1,1) has 8 blocks, more than the 4 kernel k was compiled for (.maxclusterrank)");
}

TEST(LaunchPlanner, ClusterOverSixteenIsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:100"), shape({32}, {128}, {32}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "cluster (32,1,1) has 32 blocks, more than the 16 sm_100 allows");
}

TEST(LaunchPlanner, ClusterOnArchitectureWithoutClustersIsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:80"), shape({8}, {128}, {2}));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("sm_80 has no thread block clusters"), std::string::npos);
}

TEST(LaunchPlanner, GridNotAMultipleOfClusterIsError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), shape({8, 3}, {128}, {2, 2}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "grid (8,3,1) is not a multiple of cluster (2,2,1) in y");
}

TEST(LaunchPlanner, CompiledClusterNeedsNoDimensionAttribute) {
  KernelInfo clustered = kernel();
  clustered.cluster_dims = {2, 1, 1};
  for (Dim3 requested : {Dim3{}, Dim3{2, 1, 1}}) {
    auto plan = plan_launch(clustered, limits_of("cuda:90"), shape({8}, {128}, requested));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->launch_attributes,
              (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE", 5, {1}}}));
    EXPECT_TRUE(has_note(*plan, "compiled into kernel k"));
  }
}

TEST(LaunchPlanner, ClusterDifferentFromCompiledIsError) {
  KernelInfo clustered = kernel();
  clustered.cluster_dims = {2, 1, 1};
  auto plan = plan_launch(clustered, limits_of("cuda:90"), shape({8}, {128}, {4}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message,
            "cluster (4,1,1) does not match the cluster (2,1,1) kernel k was compiled with "
            "(__cluster_dims__ / .reqnctapercluster)");
}

TEST(LaunchPlanner, CompiledClusterStillChecksTheGrid) {
  KernelInfo clustered = kernel();
  clustered.cluster_dims = {4, 1, 1};
  auto plan = plan_launch(clustered, limits_of("cuda:90"), shape({6}, {128}));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("is not a multiple of cluster (4,1,1) in x"), std::string::npos);
}

TEST(LaunchPlanner, CooperativeSetsCooperativeAttribute) {
  LaunchConfig config = shape({64}, {256});
  config.cooperative = true;
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), config);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->launch_attributes, (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_COOPERATIVE", 2, {1}}}));
  EXPECT_TRUE(has_note(*plan, "known only on a device"));
}

TEST(LaunchPlanner, CooperativeGridOverResidentCapacityIsError) {
  DeviceLimits limits = limits_of("cuda:90");
  limits.sm_count = 132;
  limits.max_resident_blocks_per_sm = 2;
  LaunchConfig config = shape({264}, {256});
  config.cooperative = true;
  EXPECT_TRUE(plan_launch(kernel(), limits, config).ok());
  config.grid = {265};
  auto plan = plan_launch(kernel(), limits, config);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message,
            "cooperative grid (265,1,1) has 265 blocks, more than the 264 sm_90 can keep resident at once "
            "(132 SMs x 2 blocks each)");
}

TEST(LaunchPlanner, DependentLaunchSetsProgrammaticStreamSerialization) {
  LaunchConfig config = shape({4}, {128});
  config.programmatic_dependent_launch = true;
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), config);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->launch_attributes,
            (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION", 6, {1}}}));
  EXPECT_FALSE(has_note(*plan, "only on sm_90"));
  auto older = plan_launch(kernel(), limits_of("cuda:80"), config);
  ASSERT_TRUE(older.ok());
  EXPECT_TRUE(has_note(*older, "only on sm_90"));
}

TEST(LaunchPlanner, StreamPriorityBecomesLaunchPriority) {
  LaunchConfig config = shape({4}, {128});
  config.stream_priority = -2;
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), config);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->launch_attributes, (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_PRIORITY", 8, {-2}}}));
}

// Triton's launcher has room for four launch attributes; this needs six.
TEST(LaunchPlanner, AllAtOnceListsEveryAttribute) {
  LaunchConfig config = shape({32, 2}, {256}, {16});
  config.dynamic_shared_bytes = 300 * 1024;
  config.cooperative = true;
  config.programmatic_dependent_launch = true;
  config.stream_priority = -1;
  auto plan = plan_launch(kernel(), limits_of("cuda:107"), config);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->function_attributes,
            (std::vector<FA>{{"CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE", 17, 3},
                             {"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8, 307200},
                             {"CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14, 1}}));
  EXPECT_EQ(plan->launch_attributes,
            (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE", 18, {3}},
                             {"CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", 4, {16, 1, 1}},
                             {"CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE", 5, {1}},
                             {"CU_LAUNCH_ATTRIBUTE_COOPERATIVE", 2, {1}},
                             {"CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION", 6, {1}},
                             {"CU_LAUNCH_ATTRIBUTE_PRIORITY", 8, {-1}}}));
}

TEST(LaunchPlanner, PlanFromPtxSaysItRestsOnPtx) {
  auto plan = plan_launch(kernel(), limits_of("cuda:107"), shape({1}, {32}), KernelInfoSource::ptx);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->rests_on_ptx);
  EXPECT_TRUE(has_note(*plan, "read from PTX"));
  auto from_cubin = plan_launch(kernel(), limits_of("cuda:107"), shape({1}, {32}));
  EXPECT_FALSE(from_cubin->rests_on_ptx);
}

TEST(LaunchPlanner, DescribeNamesEachAttributeWithIdAndValue) {
  LaunchConfig config = shape({8}, {128}, {2});
  config.dynamic_shared_bytes = 100 * 1024;
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), config);
  ASSERT_TRUE(plan.ok());
  const std::string text = describe(*plan);
  EXPECT_NE(text.find("launch k on sm_90: grid (8,1,1), block (128,1,1)"), std::string::npos) << text;
  EXPECT_NE(text.find("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8) = 102400"), std::string::npos) << text;
  EXPECT_NE(text.find("CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (4) = (2,1,1)"), std::string::npos) << text;
  EXPECT_NE(text.find("CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE (5) = 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace kjit
