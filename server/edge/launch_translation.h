// Wire <-> domain for the Launcher service: launch configurations and plans.
#pragma once

#include "kjit/v1/launch.pb.h"
#include "kjit/launch_config.h"
#include "launch/launch_plan.h"

namespace kjit {

LaunchConfig from_proto(const v1::LaunchConfig& config);
void to_proto(const LaunchPlan& plan, bool limits_from_device, v1::LaunchPlan& out);

}  // namespace kjit
