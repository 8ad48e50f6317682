#include "launch/hip_launch_plan.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace kjit {
namespace {

// HIP's attribute and launch ids are CUDA's numbers (the HIP binding maps
// each to its HIP call), spelled here as HIP names them.
constexpr int k_max_dynamic_shared_id = 8;   // hipFuncAttributeMaxDynamicSharedMemorySize
constexpr int k_cooperative_id = 2;          // hipModuleLaunchCooperativeKernel
constexpr int k_priority_id = 8;             // the stream's priority

// HIP's grid limit: work-items per dimension fit in 32 bits.
constexpr uint64_t k_max_work_items_per_dimension = 4294967295u;

Error invalid(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

Dim3 with_ones(Dim3 dims) {
  if (dims.y == 0) dims.y = 1;
  if (dims.z == 0) dims.z = 1;
  return dims;
}

std::string label(const KernelInfo& kernel) {
  if (!kernel.name.empty()) return "kernel " + kernel.name;
  if (!kernel.lowered_name.empty()) return "kernel " + kernel.lowered_name;
  return "the kernel";
}

}  // namespace

Result<LaunchPlan> plan_hip_launch(const KernelInfo& kernel, const AmdArchInfo& arch, const LaunchConfig& config) {
  LaunchPlan plan;
  plan.kernel = kernel.lowered_name.empty() ? kernel.name : kernel.lowered_name;
  plan.target = std::string(arch.processor);
  if (config.grid.x == 0 || config.block.x == 0) return invalid("grid.x and block.x must be at least 1");
  plan.grid = with_ones(config.grid);
  plan.block = with_ones(config.block);
  const uint64_t workgroup = uint64_t{plan.block.x} * plan.block.y * plan.block.z;

  // The workgroup: the processor's limit, then the kernel's compiled bound.
  if (workgroup > arch.max_workgroup_size)
    return invalid("block " + to_string(plan.block) + " has " + std::to_string(workgroup) + " work-items; " +
                   std::string(arch.processor) + " allows at most " + std::to_string(arch.max_workgroup_size));
  if (kernel.max_threads_per_block != 0 && workgroup > kernel.max_threads_per_block)
    return invalid("block " + to_string(plan.block) + " has " + std::to_string(workgroup) + " work-items; " +
                   label(kernel) + " was compiled for a max flat workgroup size of " +
                   std::to_string(kernel.max_threads_per_block) + " (__launch_bounds__ / amdgpu-flat-work-group-size)");
  if (kernel.required_threads.is_set() && with_ones(kernel.required_threads) != plan.block)
    return invalid(label(kernel) + " requires a workgroup of exactly " + to_string(with_ones(kernel.required_threads)) +
                   "; block is " + to_string(plan.block));
  const uint32_t grid[3] = {plan.grid.x, plan.grid.y, plan.grid.z};
  const uint32_t block[3] = {plan.block.x, plan.block.y, plan.block.z};
  for (int d = 0; d < 3; ++d)
    if (uint64_t{grid[d]} * block[d] > k_max_work_items_per_dimension)
      return invalid("grid " + to_string(plan.grid) + " of block " + to_string(plan.block) +
                     " has more than 2^32-1 work-items in one dimension, HIP's limit");

  if (config.cluster.is_set() || kernel.cluster_dims.is_set())
    return invalid("thread block clusters do not exist on AMD GPUs (" + std::string(arch.processor) + ")");
  if (config.programmatic_dependent_launch)
    return invalid("programmatic dependent launch does not exist on AMD GPUs (" + std::string(arch.processor) + ")");

  // LDS: the static group segment plus the dynamic request, per workgroup.
  plan.static_shared_bytes = kernel.static_shared_bytes;
  plan.dynamic_shared_bytes = config.dynamic_shared_bytes;
  const uint64_t lds = uint64_t{kernel.static_shared_bytes} + config.dynamic_shared_bytes;
  if (lds > arch.lds_per_workgroup)
    return make_error(ErrorCode::invalid_argument,
                      "out of resource: LDS: requires " + std::to_string(lds) + " bytes, limit " +
                          std::to_string(arch.lds_per_workgroup) + " on " + std::string(arch.processor) + " (" +
                          label(kernel) + ": " + std::to_string(kernel.static_shared_bytes) + " static + " +
                          std::to_string(config.dynamic_shared_bytes) + " dynamic)");
  if (config.dynamic_shared_bytes > k_hip_default_dynamic_lds_bytes) {
    plan.function_attributes.push_back({"hipFuncAttributeMaxDynamicSharedMemorySize", k_max_dynamic_shared_id,
                                        static_cast<int>(config.dynamic_shared_bytes)});
    plan.notes.push_back("dynamic LDS of " + std::to_string(config.dynamic_shared_bytes) + " bytes is beyond HIP's default of " +
                         std::to_string(k_hip_default_dynamic_lds_bytes) +
                         ": hipFuncAttributeMaxDynamicSharedMemorySize is set on the function first");
  }

  if (config.cooperative) {
    plan.launch_attributes.push_back({"hipModuleLaunchCooperativeKernel", k_cooperative_id, {1}});
    plan.notes.push_back("cooperative: every workgroup must be resident at once; the runtime checks this against "
                         "the device's compute units");
  }
  if (config.stream_priority != 0)
    plan.launch_attributes.push_back({"stream priority", k_priority_id, {config.stream_priority}});

  const uint32_t wavefront = kernel.wavefront_size ? kernel.wavefront_size : arch.default_wavefront;
  if (workgroup % wavefront != 0)
    plan.notes.push_back("the workgroup of " + std::to_string(workgroup) + " work-items is not a multiple of the " +
                         std::to_string(wavefront) + "-wide wavefront: the last wavefront runs partly idle");
  return plan;
}

}  // namespace kjit
