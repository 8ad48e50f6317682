// What a device allows a launch: threads, shared memory in each of its modes,
// cluster sizes, co-resident blocks. From the target table when no device is
// at hand, from the driver when one is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kjit/status.h"
#include "launch/driver_binding.h"
#include "target/target.h"

namespace kjit {

struct DeviceLimits {
  uint32_t sm = 0;     // 90 for sm_90 and sm_90a
  std::string target;  // "sm_90a": how messages name the limit's owner
  uint32_t max_threads_per_block = k_max_threads_per_block;
  // Shared memory per block (static + dynamic), bytes. Each is what the
  // driver allows the kernel itself: the 1 KiB it reserves per block on
  // sm_80+ is already taken off (e.g. 232448 = 228 KiB - 1 KiB on sm_90).
  uint32_t default_shared_per_block = k_default_dynamic_shared_bytes;  // without any attribute
  uint32_t optin_shared_per_block = 0;      // with MAX_DYNAMIC_SHARED_SIZE_BYTES; 0 = unknown
  uint32_t oversized_shared_per_block = 0;  // with SHARED_MEMORY_MODE = ALLOW_OVERSIZED; 0 = no such mode
  uint32_t shared_per_sm = 0;               // 0 = unknown
  // Blocks per cluster: portable (8) and with NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
  // Both 0 where the architecture has no clusters.
  uint32_t portable_cluster_size = 0;
  uint32_t max_cluster_size = 0;
  // Known only with a device (0 = unknown). max_resident_blocks_per_sm starts
  // as the hardware maximum; refine_with_occupancy lowers it to what one
  // kernel at one launch shape reaches, which is what a cooperative grid needs.
  uint32_t sm_count = 0;
  uint32_t max_resident_blocks_per_sm = 0;
  bool from_device = false;
  std::vector<std::string> notes;  // figures that are estimates or unverified, in words
};

// Limits from kjit's target table (src/target): what a plan for a target
// without a device rests on.
DeviceLimits limits_for_target(const Target& target);

// Limits of the binding's device, from cuDeviceGetAttribute; on compute
// capability 10.7 the oversized maximum is attribute 150. Cluster sizes come
// from the table (the driver has no attribute for them).
Result<DeviceLimits> limits_from_device(DriverBinding& driver);

// Sets max_resident_blocks_per_sm to cuOccupancyMaxActiveBlocksPerMultiprocessor
// for `function` at this block size and dynamic shared memory. The function's
// attributes (MAX_DYNAMIC_SHARED_SIZE_BYTES) must already be set, or the
// driver reports no occupancy for large shared memory.
Status refine_with_occupancy(DeviceLimits& limits, DriverBinding& driver, FunctionHandle function,
                             uint32_t block_threads, uint32_t dynamic_shared_bytes);

}  // namespace kjit
