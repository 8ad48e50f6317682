// What the launch tests plan with: a target's limits, a kernel "k" with
// nothing compiled into it, a launch shape, and a plan that must succeed.
#pragma once

#include <gtest/gtest.h>

#include "launch/launch_plan.h"

namespace kjit::test {

inline DeviceLimits limits_of(const char* target) {
  return limits_for_target(*parse_target(target));
}

inline KernelInfo kernel() {
  KernelInfo info;
  info.name = "k";
  info.lowered_name = "k";
  return info;
}

inline LaunchConfig shape(Dim3 grid, Dim3 block, Dim3 cluster = {}) {
  LaunchConfig config;
  config.grid = grid;
  config.block = block;
  config.cluster = cluster;
  return config;
}

// The plan, or (failing the test) an empty one.
inline LaunchPlan plan_of(const LaunchConfig& config, const char* target = "cuda:90",
                          const KernelInfo& info = kernel()) {
  Result<LaunchPlan> plan = plan_launch(info, limits_of(target), config);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : LaunchPlan{};
}

}  // namespace kjit::test
