// A launch request as a caller states it: the shape of the grid and what the
// launch needs (dynamic shared memory, clusters, cooperative or dependent
// launch, priority). The planner turns it into driver calls.
#pragma once

#include <cstdint>

#include "kjit/types.h"

namespace kjit {

struct LaunchConfig {
  // Blocks in the grid and threads in a block. x must be at least 1; a zero
  // y or z means 1, so {256} is a one-dimensional launch.
  Dim3 grid;
  Dim3 block;
  // Blocks per thread block cluster; all zero = no cluster requested (a
  // kernel compiled with cluster dims still gets them). A zero y or z means 1.
  Dim3 cluster;
  uint32_t dynamic_shared_bytes = 0;  // per block, besides the kernel's static shared memory
  bool cooperative = false;           // grid-wide sync: every block must be resident at once
  // Programmatic dependent launch: may overlap the previous kernel in the
  // stream, which then waits with griddepcontrol / cudaGridDependencySynchronize.
  bool programmatic_dependent_launch = false;
  // CUDA's convention: lower is higher priority, 0 the default. Non-zero is
  // passed as the launch's priority, so any stream can carry it.
  int stream_priority = 0;
};

}  // namespace kjit
