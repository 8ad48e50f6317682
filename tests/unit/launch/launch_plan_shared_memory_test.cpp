// The planner's shared memory rules: the 48 KiB default, the opt-in limit,
// sm_107's oversized mode, and which static figure counts.
#include <gtest/gtest.h>

#include "launch/launch_plan.h"
#include "plan_helpers.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_with;
using test::limits_of;

constexpr uint32_t k_kib = 1024;

KernelInfo kernel(uint32_t static_shared = 0, uint32_t section = 0) {
  KernelInfo info = test::kernel();
  info.static_shared_bytes = static_shared;
  info.shared_section_bytes = section;
  return info;
}

LaunchConfig with_dynamic(uint32_t bytes) {
  LaunchConfig config = test::shape({4}, {128});
  config.dynamic_shared_bytes = bytes;
  return config;
}

using FA = FunctionAttributeSetting;
using LA = LaunchAttributeSetting;

TEST(LaunchPlanner, BelowDefaultSharedMemorySetsNoAttributes) {
  auto plan = plan_launch(kernel(4096), limits_of("cuda:90"), with_dynamic(16 * k_kib));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->function_attributes.empty());
  EXPECT_TRUE(plan->launch_attributes.empty());
  EXPECT_EQ(plan->dynamic_shared_bytes, 16 * k_kib);
  EXPECT_EQ(plan->grid, (Dim3{4, 1, 1}));
}

TEST(LaunchPlanner, Exactly48KiBNeedsNoOptIn) {
  auto plan = plan_launch(kernel(8 * k_kib), limits_of("cuda:90"), with_dynamic(40 * k_kib));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->function_attributes.empty());
}

TEST(LaunchPlanner, Over48KiBSetsMaxDynamicSharedSize) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), with_dynamic(100 * k_kib));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->function_attributes,
            (std::vector<FA>{{"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8, 102400}}));
  EXPECT_TRUE(plan->launch_attributes.empty());
  EXPECT_FALSE(plan->oversized_shared_memory);
}

TEST(LaunchPlanner, StaticPushingTotalOver48KiBSetsOnlyTheDynamicPart) {
  auto plan = plan_launch(kernel(40 * k_kib), limits_of("cuda:80"), with_dynamic(10 * k_kib));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->function_attributes,
            (std::vector<FA>{{"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8, 10240}}));
}

TEST(LaunchPlanner, OptInMaximumItselfIsAccepted) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), with_dynamic(232448));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->function_attributes[0].value, 232448);
}

TEST(LaunchPlanner, OverOptInOnSm90IsOutOfResourceError) {
  auto plan = plan_launch(kernel(), limits_of("cuda:90"), with_dynamic(230 * k_kib));
  ASSERT_TRUE(fails_with(plan, ErrorCode::invalid_argument));
  EXPECT_EQ(
      plan.error().message.rfind("out of resource: shared memory: requires 235520 bytes, limit 232448 on sm_90", 0), 0u)
      << plan.error().message;
}

TEST(LaunchPlanner, Sm120OptInLimitIs99KiB) {
  auto plan = plan_launch(kernel(), limits_of("cuda:120"), with_dynamic(100 * k_kib));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("requires 102400 bytes, limit 101376 on sm_120"), std::string::npos)
      << plan.error().message;
}

TEST(LaunchPlanner, LargerSectionFigureCountsAgainstTheLimitAndIsNoted) {
  // ptxas says 4096, the sm_90 section says 5120: 4096 + 228352 fits the
  // opt-in limit exactly, 5120 + 228352 does not.
  auto plan = plan_launch(kernel(4096, 5120), limits_of("cuda:90"), with_dynamic(232448 - 4096));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("requires 233472 bytes, limit 232448"), std::string::npos)
      << plan.error().message;

  auto fits = plan_launch(kernel(4096, 5120), limits_of("cuda:90"), with_dynamic(64 * k_kib));
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->static_shared_bytes, 5120u);
  bool noted = false;
  for (const auto& note : fits->notes) noted |= note.find("5120") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(LaunchPlanner, OversizedOnSm107SetsModeOnFunctionAndLaunchAndForcesSpread) {
  auto plan = plan_launch(kernel(), limits_of("cuda:107"), with_dynamic(300 * k_kib));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->function_attributes,
            (std::vector<FA>{{"CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE", 17, 3},
                             {"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8, 307200}}));
  EXPECT_EQ(plan->launch_attributes,
            (std::vector<LA>{{"CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE", 18, {3}},
                             {"CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE", 5, {1}}}));
  EXPECT_TRUE(plan->oversized_shared_memory);
  bool l1_note = false, unverified_note = false;
  for (const auto& note : plan->notes) {
    l1_note |= note.find("L1 cache drops to 8 KiB") != std::string::npos && note.find("SPREAD") != std::string::npos;
    unverified_note |= note.find("unverified") != std::string::npos;
  }
  EXPECT_TRUE(l1_note);
  EXPECT_TRUE(unverified_note);
}

TEST(LaunchPlanner, Sm107WithinOptInUsesNoOversizedMode) {
  auto plan = plan_launch(kernel(), limits_of("cuda:107"), with_dynamic(200 * k_kib));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->oversized_shared_memory);
  EXPECT_EQ(plan->function_attributes.size(), 1u);
  EXPECT_TRUE(plan->launch_attributes.empty());
}

TEST(LaunchPlanner, OverOversizedLimitOnSm107IsError) {
  // 328 KiB per SM less the 1 KiB reserve = 334848 bytes per block.
  auto at_limit = plan_launch(kernel(), limits_of("cuda:107"), with_dynamic(334848));
  EXPECT_TRUE(at_limit.ok());
  auto plan = plan_launch(kernel(), limits_of("cuda:107"), with_dynamic(334849));
  ASSERT_TRUE(fails_with(plan, ErrorCode::invalid_argument));
  EXPECT_EQ(
      plan.error().message.rfind("out of resource: shared memory: requires 334849 bytes, limit 334848 on sm_107", 0),
      0u)
      << plan.error().message;
}

TEST(LaunchPlanner, OversizedModeIsNotUsedOnSm100) {
  auto plan = plan_launch(kernel(), limits_of("cuda:100"), with_dynamic(300 * k_kib));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("limit 232448 on sm_100"), std::string::npos);
}

TEST(LaunchPlanner, UnknownOptInLimitSetsAttributeAndLeavesTheCheckToTheDriver) {
  auto plan = plan_launch(kernel(), limits_of("cuda:88"), with_dynamic(64 * k_kib));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->function_attributes.size(), 1u);
  bool noted = false;
  for (const auto& note : plan->notes)
    noted |= note.find("opt-in shared memory limit of sm_88 is unknown") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace kjit
