// A Triton kernel's launch, from the metadata Triton wrote beside it: the
// block is num_warps warps, the dynamic shared memory is Triton's "shared",
// a kernel of num_ctas > 1 runs in clusters of that many blocks (the grid's
// x counted in programs, as Triton's launcher counts it), cooperative grid
// and programmatic dependent launch as compiled, and the two scratch
// buffers Triton passes after the kernel's own arguments. The launch
// planner then applies the rules every kernel gets (the opt-in, sm_107's
// oversized shared memory with SPREAD scheduling, cluster limits).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kjit/launch_config.h"
#include "kjit/status.h"

namespace kjit {

struct TritonLaunch {
  uint32_t num_warps = 4;
  uint32_t num_ctas = 1;
  Dim3 cluster_dims;  // an older build's explicit cluster shape; zero when not given
  uint32_t shared_bytes = 0;
  bool cooperative = false;
  bool programmatic_dependent_launch = false;
  uint64_t global_scratch_size = 0;  // bytes per program; 0: a null pointer
  uint64_t global_scratch_align = 1;
  uint64_t profile_scratch_size = 0;
  uint64_t profile_scratch_align = 1;
};

// Reads Triton's metadata JSON; invalid_argument naming what is missing or
// malformed.
Result<TritonLaunch> read_triton_launch(std::string_view metadata_json);

// The caller's configuration completed from the metadata. The caller gives
// the grid in programs (Triton's grid); a block, dynamic shared memory or a
// cluster the caller also gives must agree with the kernel's, else
// invalid_argument saying what the kernel was compiled for.
Result<LaunchConfig> triton_launch_config(const TritonLaunch& triton, LaunchConfig caller, uint32_t warp_size);

// Bytes of one scratch buffer for a grid (per-program size × programs ×
// num_ctas, as Triton allocates it); 0 when the kernel needs none.
uint64_t triton_scratch_bytes(uint64_t per_program, const Dim3& grid, uint32_t num_ctas);

// The scratch arguments Triton passes after the kernel's own (global, then
// profile), for a kernel whose parameter block is `param_bytes` when the
// caller's arguments take `given_bytes`: each one's size in bytes for this
// grid of programs, 0 for a null pointer. Empty when the caller's arguments
// fill the block, or the gap is not one or two pointers (the argument check
// then says what is wrong).
std::vector<uint64_t> triton_scratch_arguments(const TritonLaunch& triton, uint32_t param_bytes, size_t given_bytes,
                                               const Dim3& programs);

}  // namespace kjit
