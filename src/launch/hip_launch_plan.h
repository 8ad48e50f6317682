// The launch planner for AMD code objects: HIP's rules for a kernel on a gfx
// processor, giving the same LaunchPlan the CUDA planner gives, with HIP's
// names for what it sets (the HIP binding executes either). A pure function.
#pragma once

#include "kjit/launch_config.h"
#include "kjit/status.h"
#include "kjit/types.h"
#include "launch/launch_plan.h"
#include "target/amd_archs.h"

namespace kjit {

// The rules: the workgroup within the processor's and the kernel's maximum
// flat workgroup size (and equal to a required size); LDS, static plus
// dynamic, within the processor's LDS per workgroup, or an error
//   "out of resource: LDS: requires N bytes, limit M on gfxNNN ..."
// dynamic LDS beyond HIP's default (48 KiB) set on the function first with
// hipFuncAttributeMaxDynamicSharedMemorySize; cooperative launches through
// hipModuleLaunchCooperativeKernel; no clusters and no programmatic
// dependent launch, which AMD GPUs do not have (invalid_argument).
Result<LaunchPlan> plan_hip_launch(const KernelInfo& kernel, const AmdArchInfo& arch, const LaunchConfig& config);

}  // namespace kjit
