// The launch planner's rules (docs/ARCHITECTURE.md, "Launch"). Checks come first and
// stop at the first impossibility; attributes are emitted last, in one fixed
// order, so that a plan reads the same whichever rules fired.
#include "launch/launch_plan.h"

#include <algorithm>

#include "launch/cuda_enums.h"

namespace kjit {
namespace {

namespace ids = cuda_ids;

// The driver's grid and block shape limits (every architecture kjit knows).
constexpr uint32_t k_max_grid_x = 2147483647u;
constexpr uint32_t k_max_grid_yz = 65535;
constexpr uint32_t k_max_block_xy = 1024;
constexpr uint32_t k_max_block_z = 64;
constexpr uint32_t k_max_attribute_value = 2147483647u;

// What the checks decided; turned into attributes by emit_attributes.
struct Decisions {
  bool max_dynamic_shared = false;
  bool oversized = false;
  bool non_portable_cluster = false;
  bool cluster_dimension = false;
  Dim3 cluster;
  bool spread = false;
  bool cooperative = false;
  bool dependent_launch = false;
};

struct Inputs {
  const KernelInfo& kernel;
  const DeviceLimits& limits;
  const LaunchConfig& config;
};

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message));
}

Dim3 with_ones(Dim3 dims) {
  if (dims.y == 0) dims.y = 1;
  if (dims.z == 0) dims.z = 1;
  return dims;
}

uint64_t volume(const Dim3& dims) {
  return uint64_t{dims.x} * dims.y * dims.z;
}

std::string kernel_label(const KernelInfo& kernel) {
  if (!kernel.name.empty()) return "kernel " + kernel.name;
  if (!kernel.lowered_name.empty()) return "kernel " + kernel.lowered_name;
  return "the kernel";
}

Status check_shape(const Inputs& in, LaunchPlan& plan) {
  const LaunchConfig& config = in.config;
  if (config.grid.x == 0) return invalid("grid " + to_string(config.grid) + " has no blocks: x must be at least 1");
  if (config.block.x == 0) return invalid("block " + to_string(config.block) + " has no threads: x must be at least 1");
  plan.grid = with_ones(config.grid);
  plan.block = with_ones(config.block);
  if (plan.grid.x > k_max_grid_x || plan.grid.y > k_max_grid_yz || plan.grid.z > k_max_grid_yz) {
    return invalid("grid " + to_string(plan.grid) + " exceeds the driver's maximum (2147483647,65535,65535)");
  }
  if (plan.block.x > k_max_block_xy || plan.block.y > k_max_block_xy || plan.block.z > k_max_block_z) {
    return invalid("block " + to_string(plan.block) + " exceeds the per-dimension maximum (1024,1024,64)");
  }
  const uint64_t threads = volume(plan.block);
  if (threads > in.limits.max_threads_per_block) {
    return invalid("block " + to_string(plan.block) + " has " + std::to_string(threads) + " threads, more than the " +
                   std::to_string(in.limits.max_threads_per_block) + " per block on " + plan.target);
  }
  const KernelInfo& kernel = in.kernel;
  if (kernel.max_threads_per_block != 0 && threads > kernel.max_threads_per_block) {
    return invalid("block " + to_string(plan.block) + " has " + std::to_string(threads) + " threads, more than the " +
                   std::to_string(kernel.max_threads_per_block) + " " + kernel_label(kernel) +
                   " was compiled for (__launch_bounds__ / .maxntid)");
  }
  if (kernel.required_threads.is_set() && with_ones(kernel.required_threads) != plan.block) {
    return invalid("block " + to_string(plan.block) + " does not match the block " +
                   to_string(with_ones(kernel.required_threads)) + " " + kernel_label(kernel) + " requires (.reqntid)");
  }
  return Ok{};
}

// A cluster comes from the request or from the binary (__cluster_dims__);
// when both, they must agree. A compiled cluster needs no CLUSTER_DIMENSION:
// the driver applies it, and passing one is where mismatches start.
Status check_cluster(const Inputs& in, LaunchPlan& plan, Decisions& decisions) {
  const bool requested = in.config.cluster.is_set();
  const bool compiled = in.kernel.cluster_dims.is_set();
  if (!requested && !compiled) return Ok{};
  if (requested && in.config.cluster.x == 0) {
    return invalid("cluster " + to_string(in.config.cluster) + " has no blocks: x must be at least 1");
  }
  const Dim3 compiled_dims = with_ones(in.kernel.cluster_dims);
  const Dim3 cluster = requested ? with_ones(in.config.cluster) : compiled_dims;
  if (requested && compiled && cluster != compiled_dims) {
    return invalid("cluster " + to_string(cluster) + " does not match the cluster " + to_string(compiled_dims) + " " +
                   kernel_label(in.kernel) + " was compiled with (__cluster_dims__ / .reqnctapercluster)");
  }
  const DeviceLimits& limits = in.limits;
  if (limits.max_cluster_size == 0) {
    return invalid((requested ? "cluster " + to_string(cluster) + " requested"
                              : kernel_label(in.kernel) + " has compiled cluster dims " + to_string(cluster)) +
                   ", but " + plan.target + " has no thread block clusters (sm_90 and newer)");
  }
  const uint64_t size = volume(cluster);
  if (size > limits.max_cluster_size) {
    return invalid("cluster " + to_string(cluster) + " has " + std::to_string(size) + " blocks, more than the " +
                   std::to_string(limits.max_cluster_size) + " " + plan.target + " allows");
  }
  if (in.kernel.max_cluster_rank != 0 && size > in.kernel.max_cluster_rank) {
    return invalid("cluster " + to_string(cluster) + " has " + std::to_string(size) + " blocks, more than the " +
                   std::to_string(in.kernel.max_cluster_rank) + " " + kernel_label(in.kernel) +
                   " was compiled for (.maxclusterrank)");
  }
  const uint32_t grid[3] = {plan.grid.x, plan.grid.y, plan.grid.z};
  const uint32_t shape[3] = {cluster.x, cluster.y, cluster.z};
  for (int axis = 0; axis < 3; ++axis) {
    if (grid[axis] % shape[axis] != 0) {
      return invalid("grid " + to_string(plan.grid) + " is not a multiple of cluster " + to_string(cluster) + " in " +
                     std::string(1, "xyz"[axis]));
    }
  }
  const uint32_t portable = limits.portable_cluster_size ? limits.portable_cluster_size : k_portable_cluster_size;
  if (size > portable) {
    decisions.non_portable_cluster = true;
    plan.notes.push_back("cluster of " + std::to_string(size) + " blocks is over the portable " +
                         std::to_string(portable) + ": NON_PORTABLE_CLUSTER_SIZE_ALLOWED is set on the function");
  }
  if (compiled) {
    plan.notes.push_back("cluster " + to_string(cluster) + " is compiled into " + kernel_label(in.kernel) +
                         "; the driver applies it, so the launch passes no CLUSTER_DIMENSION");
  } else {
    decisions.cluster_dimension = true;
    decisions.cluster = cluster;
  }
  decisions.spread = true;
  return Ok{};
}

Error shared_memory_error(uint64_t required, uint32_t limit, const Inputs& in, const LaunchPlan& plan,
                          std::string_view which) {
  return invalid("out of resource: shared memory: requires " + std::to_string(required) + " bytes, limit " +
                 std::to_string(limit) + " on " + plan.target + " (" + kernel_label(in.kernel) + ": " +
                 std::to_string(plan.static_shared_bytes) + " static + " +
                 std::to_string(in.config.dynamic_shared_bytes) + " dynamic; " + std::string(which) + ")");
}

// The 48 KiB default, the opt-in limit, and beyond it sm_107's oversized mode.
Status check_shared_memory(const Inputs& in, LaunchPlan& plan, Decisions& decisions) {
  const KernelInfo& kernel = in.kernel;
  const DeviceLimits& limits = in.limits;
  plan.dynamic_shared_bytes = in.config.dynamic_shared_bytes;
  plan.static_shared_bytes = std::max(kernel.static_shared_bytes, kernel.shared_section_bytes);
  if (kernel.shared_section_bytes > kernel.static_shared_bytes) {
    plan.notes.push_back("static shared memory counted as " + std::to_string(kernel.shared_section_bytes) +
                         " bytes (the cubin's .nv.shared section) rather than ptxas's " +
                         std::to_string(kernel.static_shared_bytes) +
                         ": which one the driver counts is not yet verified on a device");
  }
  const uint64_t required = uint64_t{plan.static_shared_bytes} + plan.dynamic_shared_bytes;
  if (required <= limits.default_shared_per_block) return Ok{};
  // Attribute values are ints; no device comes near this.
  if (required > k_max_attribute_value) {
    return shared_memory_error(required, k_max_attribute_value, in, plan, "the driver's int attribute range");
  }

  // Over the default the driver wants the dynamic part declared first.
  decisions.max_dynamic_shared = plan.dynamic_shared_bytes > 0;
  if (limits.optin_shared_per_block == 0) {
    plan.notes.push_back("the opt-in shared memory limit of " + plan.target + " is unknown: the driver checks the " +
                         std::to_string(required) + " bytes at launch");
    return Ok{};
  }
  if (required <= limits.optin_shared_per_block) return Ok{};
  if (limits.oversized_shared_per_block == 0) {
    return shared_memory_error(required, limits.optin_shared_per_block, in, plan, "the opt-in maximum per block");
  }
  if (required > limits.oversized_shared_per_block) {
    return shared_memory_error(required, limits.oversized_shared_per_block, in, plan,
                               "the oversized shared memory maximum per block");
  }
  decisions.oversized = true;
  decisions.spread = true;
  plan.oversized_shared_memory = true;
  plan.notes.push_back(std::to_string(required) + " bytes of shared memory exceed the opt-in limit of " +
                       std::to_string(limits.optin_shared_per_block) + " on " + plan.target +
                       ": oversized shared memory mode (SHARED_MEMORY_MODE = ALLOW_OVERSIZED on the function and "
                       "the launch); the L1 cache drops to 8 KiB and cluster scheduling is forced to SPREAD");
  return Ok{};
}

Status check_cooperative(const Inputs& in, LaunchPlan& plan, Decisions& decisions) {
  if (!in.config.cooperative) return Ok{};
  decisions.cooperative = true;
  const DeviceLimits& limits = in.limits;
  const uint64_t blocks = volume(plan.grid);
  if (limits.sm_count == 0 || limits.max_resident_blocks_per_sm == 0) {
    plan.notes.push_back("whether a cooperative grid of " + std::to_string(blocks) +
                         " blocks is resident at once is known only on a device: the driver checks at launch");
    return Ok{};
  }
  const uint64_t capacity = uint64_t{limits.sm_count} * limits.max_resident_blocks_per_sm;
  if (blocks > capacity) {
    return invalid("cooperative grid " + to_string(plan.grid) + " has " + std::to_string(blocks) +
                   " blocks, more than the " + std::to_string(capacity) + " " + plan.target +
                   " can keep resident at once (" + std::to_string(limits.sm_count) + " SMs x " +
                   std::to_string(limits.max_resident_blocks_per_sm) + " blocks each)");
  }
  return Ok{};
}

void add_function_attribute(LaunchPlan& plan, int id, int value) {
  plan.function_attributes.push_back({ids::function_attribute_name(id), id, value});
}

void add_launch_attribute(LaunchPlan& plan, int id, std::vector<int> values) {
  plan.launch_attributes.push_back({ids::launch_attribute_name(id), id, std::move(values)});
}

void emit_attributes(const Inputs& in, const Decisions& decisions, LaunchPlan& plan) {
  // The mode first: the driver measures MAX_DYNAMIC_SHARED_SIZE_BYTES against
  // the limit of the mode in force.
  if (decisions.oversized) {
    add_function_attribute(plan, ids::k_func_shared_memory_mode, ids::k_shared_memory_mode_allow_oversized);
  }
  if (decisions.max_dynamic_shared) {
    add_function_attribute(plan, ids::k_func_max_dynamic_shared_size_bytes,
                           static_cast<int>(plan.dynamic_shared_bytes));
  }
  if (decisions.non_portable_cluster) add_function_attribute(plan, ids::k_func_non_portable_cluster_size_allowed, 1);

  if (decisions.oversized) {
    add_launch_attribute(plan, ids::k_launch_shared_memory_mode, {ids::k_shared_memory_mode_allow_oversized});
  }
  if (decisions.cluster_dimension) {
    add_launch_attribute(plan, ids::k_launch_cluster_dimension,
                         {static_cast<int>(decisions.cluster.x), static_cast<int>(decisions.cluster.y),
                          static_cast<int>(decisions.cluster.z)});
  }
  if (decisions.spread) {
    add_launch_attribute(plan, ids::k_launch_cluster_scheduling_policy_preference, {ids::k_cluster_scheduling_spread});
  }
  if (decisions.cooperative) add_launch_attribute(plan, ids::k_launch_cooperative, {1});
  if (decisions.dependent_launch) add_launch_attribute(plan, ids::k_launch_programmatic_stream_serialization, {1});
  if (in.config.stream_priority != 0) add_launch_attribute(plan, ids::k_launch_priority, {in.config.stream_priority});
}

}  // namespace

std::string to_string(const Dim3& dims) {
  return "(" + std::to_string(dims.x) + "," + std::to_string(dims.y) + "," + std::to_string(dims.z) + ")";
}

Result<LaunchPlan> plan_launch(const KernelInfo& kernel, const DeviceLimits& limits, const LaunchConfig& config,
                               KernelInfoSource source) {
  const Inputs in{kernel, limits, config};
  LaunchPlan plan;
  plan.kernel = kernel.lowered_name.empty() ? kernel.name : kernel.lowered_name;
  plan.target = !limits.target.empty() ? limits.target : "sm_" + std::to_string(limits.sm);
  plan.rests_on_ptx = source == KernelInfoSource::ptx;
  Decisions decisions;

  if (Status s = check_shape(in, plan); !s) return s.error();
  if (Status s = check_cluster(in, plan, decisions); !s) return s.error();
  if (Status s = check_shared_memory(in, plan, decisions); !s) return s.error();
  if (Status s = check_cooperative(in, plan, decisions); !s) return s.error();
  if (config.programmatic_dependent_launch) {
    decisions.dependent_launch = true;
    if (limits.sm != 0 && limits.sm < 90) {
      plan.notes.push_back("programmatic dependent launch overlaps kernels only on sm_90 and newer");
    }
  }
  emit_attributes(in, decisions, plan);

  if (plan.rests_on_ptx) {
    plan.notes.push_back(
        "kernel metadata read from PTX, not from a cubin: static shared memory is the sum of the "
        ".shared declarations and registers are unknown");
  }
  plan.notes.insert(plan.notes.end(), limits.notes.begin(), limits.notes.end());
  return plan;
}

std::string describe(const LaunchPlan& plan) {
  std::string out = "launch " + (plan.kernel.empty() ? std::string("kernel") : plan.kernel) + " on " + plan.target +
                    ": grid " + to_string(plan.grid) + ", block " + to_string(plan.block) + ", shared memory " +
                    std::to_string(plan.static_shared_bytes) + " static + " +
                    std::to_string(plan.dynamic_shared_bytes) + " dynamic bytes\n";
  out += "function attributes:";
  if (plan.function_attributes.empty()) out += " none";
  out += "\n";
  for (const auto& attribute : plan.function_attributes) {
    out +=
        "  " + attribute.name + " (" + std::to_string(attribute.id) + ") = " + std::to_string(attribute.value) + "\n";
  }
  out += "launch attributes:";
  if (plan.launch_attributes.empty()) out += " none";
  out += "\n";
  for (const auto& attribute : plan.launch_attributes) {
    out += "  " + attribute.name + " (" + std::to_string(attribute.id) + ") = ";
    if (attribute.values.size() == 1) {
      out += std::to_string(attribute.values[0]);
    } else {
      out += "(";
      for (size_t i = 0; i < attribute.values.size(); ++i) {
        out += (i ? "," : "") + std::to_string(attribute.values[i]);
      }
      out += ")";
    }
    out += "\n";
  }
  if (plan.rests_on_ptx) out += "rests on PTX: yes\n";
  for (const auto& note : plan.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace kjit
