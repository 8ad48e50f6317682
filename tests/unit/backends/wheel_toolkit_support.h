// The real toolkits the wheel tests use: the system one, and the wheels
// scripts/install-deps.sh puts in KJIT_LOCAL_TOOLKIT_PREFIX.
#pragma once

#include <memory>
#include <string>

#include "backends/cuda_toolkit.h"
#include "backends/toolkit_discovery.h"

namespace kjit::test {

// The newest wheel toolkit in the project prefix with NVRTC, nvJitLink and
// nvFatbin loaded, the system toolkit as its fallback; null, with `why`
// saying what is missing, when there is none.
inline std::shared_ptr<const CudaToolkit> local_wheel_toolkit(std::string& why) {
  const std::string prefix = KJIT_TEST_LOCAL_TOOLKIT_PREFIX;
  for (const std::string& home : wheel_toolkit_homes(prefix)) {
    auto toolkit = CudaToolkit::load(home, CudaToolkit::load());
    if (toolkit->nvrtc() && toolkit->nvjitlink() && toolkit->nvfatbin()) return toolkit;
    why = "the wheel toolkit at " + home + " lacks NVRTC, nvJitLink or nvFatbin";
    return nullptr;
  }
  why = "no CUDA wheels in " + prefix + " (scripts/install-deps.sh installs them)";
  return nullptr;
}

}  // namespace kjit::test
