// HIP's launch rules for AMD code objects, and that the HIP binding can
// execute what they plan.
#include <gtest/gtest.h>

#include "launch/hip_driver.h"
#include "launch/hip_launch_plan.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_with;

KernelInfo lds_kernel(uint32_t static_lds, uint32_t max_flat = 256) {
  KernelInfo k;
  k.name = k.lowered_name = "tile";
  k.static_shared_bytes = static_lds;
  k.max_threads_per_block = max_flat;
  k.wavefront_size = 64;
  return k;
}

LaunchConfig launch(uint32_t block, uint32_t dynamic = 0) {
  LaunchConfig c;
  c.grid = {128, 1, 1};
  c.block = {block, 1, 1};
  c.dynamic_shared_bytes = dynamic;
  return c;
}

const AmdArchInfo& gfx90a() { return *find_amd_arch("gfx90a"); }

TEST(HipLaunchPlan, DynamicLdsWithinTheDefaultNeedsNoAttribute) {
  Result<LaunchPlan> plan = plan_hip_launch(lds_kernel(16384), gfx90a(), launch(256, 49152));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->function_attributes.empty());
  EXPECT_EQ(plan->target, "gfx90a");
  EXPECT_EQ(plan->static_shared_bytes, 16384u);
  EXPECT_TRUE(check_plan_supported_on_hip(*plan));
}

TEST(HipLaunchPlan, DynamicLdsBeyondTheDefaultSetsTheFunctionAttribute) {
  Result<LaunchPlan> plan = plan_hip_launch(lds_kernel(0), gfx90a(), launch(256, 49153));
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->function_attributes.size(), 1u);
  EXPECT_EQ(plan->function_attributes[0].name, "hipFuncAttributeMaxDynamicSharedMemorySize");
  EXPECT_EQ(plan->function_attributes[0].value, 49153);
  EXPECT_TRUE(check_plan_supported_on_hip(*plan));  // the HIP binding executes it
}

TEST(HipLaunchPlan, LdsBeyondTheLimitIsAnErrorNamingBytesAndLimit) {
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(32768), gfx90a(), launch(256, 32769)), ErrorCode::invalid_argument,
                         "out of resource: LDS: requires 65537 bytes, limit 65536 on gfx90a"));
  EXPECT_TRUE(plan_hip_launch(lds_kernel(32768), gfx90a(), launch(256, 32768)));  // exactly the limit
}

TEST(HipLaunchPlan, WorkgroupsRespectTheKernelsBoundsAndTheProcessors) {
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(0, 256), gfx90a(), launch(512)), ErrorCode::invalid_argument,
                         "max flat workgroup size of 256"));
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(0, 0), gfx90a(), launch(1025)), ErrorCode::invalid_argument,
                         "at most 1024"));
  KernelInfo required = lds_kernel(0, 0);
  required.required_threads = {64, 1, 1};
  EXPECT_TRUE(fails_with(plan_hip_launch(required, gfx90a(), launch(128)), ErrorCode::invalid_argument, "exactly"));
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(0), gfx90a(), launch(0)), ErrorCode::invalid_argument));
  LaunchConfig huge = launch(256);
  huge.grid = {4294967295u, 1, 1};
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(0), gfx90a(), huge), ErrorCode::invalid_argument, "2^32-1"));
}

TEST(HipLaunchPlan, WhatAmdGpusLackIsRefusedAndCooperativeIsPlanned) {
  LaunchConfig cluster = launch(256);
  cluster.cluster = {2, 1, 1};
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(0), gfx90a(), cluster), ErrorCode::invalid_argument, "clusters"));
  LaunchConfig pdl = launch(256);
  pdl.programmatic_dependent_launch = true;
  EXPECT_TRUE(fails_with(plan_hip_launch(lds_kernel(0), gfx90a(), pdl), ErrorCode::invalid_argument,
                         "programmatic dependent launch"));
  LaunchConfig cooperative = launch(256);
  cooperative.cooperative = true;
  Result<LaunchPlan> plan = plan_hip_launch(lds_kernel(0), gfx90a(), cooperative);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->launch_attributes.size(), 1u);
  EXPECT_EQ(plan->launch_attributes[0].name, "hipModuleLaunchCooperativeKernel");
  EXPECT_TRUE(check_plan_supported_on_hip(*plan));
}

TEST(HipLaunchPlan, APartialWavefrontIsNoted) {
  Result<LaunchPlan> plan = plan_hip_launch(lds_kernel(0), gfx90a(), launch(96));
  ASSERT_TRUE(plan);
  ASSERT_FALSE(plan->notes.empty());
  EXPECT_NE(plan->notes.back().find("64-wide wavefront"), std::string::npos);
}

}  // namespace
}  // namespace kjit
