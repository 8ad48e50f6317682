// Device limits from the target table or from the driver.
#include "launch/device_limits.h"

#include "launch/cuda_enums.h"

namespace kjit {
namespace {

namespace ids = cuda_ids;

void set_cluster_sizes(DeviceLimits& limits, const ArchInfo* arch) {
  limits.max_cluster_size = arch ? arch->max_cluster_size : 0;
  limits.portable_cluster_size = limits.max_cluster_size ? k_portable_cluster_size : 0;
}

}  // namespace

DeviceLimits limits_for_target(const Target& target) {
  const ArchInfo& arch = target.arch();
  DeviceLimits limits;
  limits.sm = target.sm;
  limits.target = target.sm_name();
  limits.optin_shared_per_block = arch.smem_per_block_optin;
  limits.shared_per_sm = arch.smem_per_sm;
  set_cluster_sizes(limits, &arch);
  limits.notes.push_back("limits of " + limits.target +
                         " from kjit's target table (public CUDA documentation), not from a device");
  if (arch.smem_per_block_optin == 0) {
    limits.notes.push_back("the shared memory limits of " + limits.target +
                           " are not public: only the 48 KiB default is known");
  }
  if (arch.oversized_shared_memory && arch.smem_per_sm > k_reserved_shared_bytes_per_block) {
    // The only public figure is the per-SM size; a block can at
    // most have all of it less what the driver reserves per block.
    limits.oversized_shared_per_block = arch.smem_per_sm - k_reserved_shared_bytes_per_block;
    limits.notes.push_back("oversized shared memory limit of " + std::to_string(limits.oversized_shared_per_block) +
                           " bytes per block on " + limits.target +
                           " is unverified: " + std::to_string(arch.smem_per_sm / 1024) +
                           " KiB per SM (the only public figure) less the 1 KiB the driver reserves");
  }
  return limits;
}

Result<DeviceLimits> limits_from_device(DriverBinding& driver) {
  auto attribute = [&](int id) -> Result<uint32_t> {
    Result<int> value = driver.device_attribute(id);
    if (!value) return value.error();
    return static_cast<uint32_t>(*value < 0 ? 0 : *value);
  };
  DeviceLimits limits;
  limits.from_device = true;
  auto major = attribute(ids::k_device_compute_capability_major);
  if (!major) return major.error();
  auto minor = attribute(ids::k_device_compute_capability_minor);
  if (!minor) return minor.error();
  limits.sm = *major * 10 + *minor;
  limits.target = "sm_" + std::to_string(limits.sm);

  struct Query {
    int id;
    uint32_t* field;
  };
  const Query queries[] = {
      {ids::k_device_max_threads_per_block, &limits.max_threads_per_block},
      {ids::k_device_max_shared_memory_per_block, &limits.default_shared_per_block},
      {ids::k_device_max_shared_memory_per_block_optin, &limits.optin_shared_per_block},
      {ids::k_device_max_shared_memory_per_multiprocessor, &limits.shared_per_sm},
      {ids::k_device_multiprocessor_count, &limits.sm_count},
      {ids::k_device_max_blocks_per_multiprocessor, &limits.max_resident_blocks_per_sm},
  };
  for (const Query& query : queries) {
    auto value = attribute(query.id);
    if (!value) return value.error();
    *query.field = *value;
  }

  const ArchInfo* arch = find_arch(limits.sm);
  auto cluster_launch = attribute(ids::k_device_cluster_launch);
  if (cluster_launch && *cluster_launch != 0) {
    set_cluster_sizes(limits, arch);
    if (limits.max_cluster_size == 0) {
      // A device newer than the table: only the portable size is certain.
      limits.max_cluster_size = k_portable_cluster_size;
      limits.portable_cluster_size = k_portable_cluster_size;
    }
    limits.notes.push_back("cluster size limit " + std::to_string(limits.max_cluster_size) +
                           " from kjit's target table: the driver has no attribute for it");
  }

  // Attribute 150 is only known to exist on compute capability 10.7 (what
  // Triton queries it on); elsewhere there is no oversized mode.
  if (limits.sm == 107) {
    auto oversized = attribute(ids::k_device_max_oversized_shared_memory_per_block);
    if (oversized && *oversized > 0) {
      limits.oversized_shared_per_block = *oversized;
    } else if (arch && arch->smem_per_sm > k_reserved_shared_bytes_per_block) {
      limits.oversized_shared_per_block = arch->smem_per_sm - k_reserved_shared_bytes_per_block;
      limits.notes.push_back(
          "the driver did not report attribute 150 (oversized shared memory per block); "
          "planning against the unverified " +
          std::to_string(limits.oversized_shared_per_block) + " bytes from the target table");
    }
  }
  return limits;
}

Status refine_with_occupancy(DeviceLimits& limits, DriverBinding& driver, FunctionHandle function,
                             uint32_t block_threads, uint32_t dynamic_shared_bytes) {
  Result<int> blocks = driver.max_active_blocks_per_sm(function, block_threads, dynamic_shared_bytes);
  if (!blocks) return blocks.error();
  limits.max_resident_blocks_per_sm = static_cast<uint32_t>(*blocks < 0 ? 0 : *blocks);
  if (limits.max_resident_blocks_per_sm == 0) {
    // Zero would read as "unknown" to the planner; the kernel cannot run at all.
    return make_error(ErrorCode::invalid_argument, "no block of " + std::to_string(block_threads) + " threads with " +
                                                       std::to_string(dynamic_shared_bytes) +
                                                       " bytes of dynamic shared memory fits on an SM of " +
                                                       limits.target + " (occupancy 0)");
  }
  return Ok{};
}

}  // namespace kjit
