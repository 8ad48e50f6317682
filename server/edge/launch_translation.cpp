#include "server/edge/launch_translation.h"

#include "convert/wire_convert.h"

namespace kjit {

LaunchConfig from_proto(const v1::LaunchConfig& config) {
  LaunchConfig out;
  out.grid = from_proto(config.grid());
  out.block = from_proto(config.block());
  out.cluster = from_proto(config.cluster());
  out.dynamic_shared_bytes = config.dynamic_shared_bytes();
  out.cooperative = config.cooperative();
  out.programmatic_dependent_launch = config.programmatic_dependent_launch();
  out.stream_priority = config.stream_priority();
  return out;
}

void to_proto(const LaunchPlan& plan, bool limits_from_device, v1::LaunchPlan& out) {
  out.set_kernel(plan.kernel);
  out.set_target(plan.target);
  to_proto(plan.grid, *out.mutable_grid());
  to_proto(plan.block, *out.mutable_block());
  out.set_dynamic_shared_bytes(plan.dynamic_shared_bytes);
  out.set_static_shared_bytes(plan.static_shared_bytes);
  for (const FunctionAttributeSetting& a : plan.function_attributes) {
    v1::FunctionAttribute* f = out.add_function_attributes();
    f->set_name(a.name);
    f->set_id(a.id);
    f->set_value(a.value);
  }
  for (const LaunchAttributeSetting& a : plan.launch_attributes) {
    v1::LaunchAttribute* l = out.add_launch_attributes();
    l->set_name(a.name);
    l->set_id(a.id);
    for (int v : a.values) l->add_values(v);
  }
  out.set_oversized_shared_memory(plan.oversized_shared_memory);
  out.set_rests_on_ptx(plan.rests_on_ptx);
  for (const std::string& note : plan.notes) out.add_notes(note);
  out.set_description(describe(plan));
  out.set_limits_from_device(limits_from_device);
}

}  // namespace kjit
