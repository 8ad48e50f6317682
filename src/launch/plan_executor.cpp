// Plan execution: attributes in order, then the launch.
#include "launch/plan_executor.h"

namespace kjit {

Status apply_function_attributes(DriverBinding& driver, FunctionHandle function, const LaunchPlan& plan) {
  for (const FunctionAttributeSetting& attribute : plan.function_attributes) {
    if (Status s = driver.set_function_attribute(function, attribute.id, attribute.value); !s) {
      Error e = s.error();
      if (e.message.find(attribute.name) == std::string::npos) {
        e.message = "setting " + attribute.name + " = " + std::to_string(attribute.value) + ": " + e.message;
      }
      return e;
    }
  }
  return Ok{};
}

Status apply_and_launch(DriverBinding& driver, FunctionHandle function, const LaunchPlan& plan, const LaunchArgs& args,
                        StreamHandle stream) {
  if (Status s = apply_function_attributes(driver, function, plan); !s) return s;
  return driver.launch(function, plan, args, stream);
}

Result<LaunchPlan> plan_and_launch(DriverBinding& driver, FunctionHandle function, const KernelInfo& kernel,
                                   const DeviceLimits& limits, const LaunchConfig& config, const LaunchArgs& args,
                                   StreamHandle stream, KernelInfoSource source) {
  Result<LaunchPlan> plan = plan_launch(kernel, limits, config, source);
  if (!plan) return plan.error();
  if (Status s = apply_function_attributes(driver, function, *plan); !s) return s.error();
  if (config.cooperative && limits.from_device) {
    // Occupancy depends on the attributes just set (the dynamic shared
    // memory allowance), so it is asked only now.
    DeviceLimits refined = limits;
    const uint32_t threads = plan->block.x * plan->block.y * plan->block.z;
    if (Status s = refine_with_occupancy(refined, driver, function, threads, plan->dynamic_shared_bytes); !s) {
      return s.error();
    }
    plan = plan_launch(kernel, refined, config, source);
    if (!plan) return plan.error();
  }
  if (Status s = driver.launch(function, *plan, args, stream); !s) return s.error();
  return plan;
}

}  // namespace kjit
