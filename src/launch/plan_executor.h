// Executes a launch plan through a driver binding: the function attributes
// first, in the plan's order, then one cuLaunchKernelEx with every launch
// attribute. What the client library's Kernel::launch and the Launch RPC call.
#pragma once

#include "kjit/status.h"
#include "kjit/types.h"
#include "launch/device_limits.h"
#include "launch/driver_binding.h"
#include "kjit/launch_config.h"
#include "launch/launch_plan.h"

namespace kjit {

// cuFuncSetAttribute for each of the plan's function attributes; stops at
// the first failure, whose message names the attribute and value.
Status apply_function_attributes(DriverBinding& driver, FunctionHandle function, const LaunchPlan& plan);

// apply_function_attributes, then the launch. Nothing is launched when an
// attribute cannot be set.
Status apply_and_launch(DriverBinding& driver, FunctionHandle function, const LaunchPlan& plan, const LaunchArgs& args,
                        StreamHandle stream = k_default_stream);

// Plans, applies and launches; returns the plan that was applied. For a
// cooperative launch on a device (limits.from_device) the plan is checked
// once more after the attributes are set, against this kernel's occupancy
// at this shape (refine_with_occupancy), so an oversized grid is the
// planner's error rather than the driver's.
Result<LaunchPlan> plan_and_launch(DriverBinding& driver, FunctionHandle function, const KernelInfo& kernel,
                                   const DeviceLimits& limits, const LaunchConfig& config, const LaunchArgs& args,
                                   StreamHandle stream = k_default_stream,
                                   KernelInfoSource source = KernelInfoSource::cubin);

}  // namespace kjit
