// The launch planner: from what a kernel needs (KernelInfo), what the device
// allows (DeviceLimits) and what the caller asks (LaunchConfig), the exact
// function and launch attributes to set, or an error, before any driver call.
// A pure function: no driver, no cuda.h, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"
#include "launch/device_limits.h"
#include "kjit/launch_config.h"

namespace kjit {

// One cuFuncSetAttribute call.
struct FunctionAttributeSetting {
  std::string name;  // cuda.h spelling: "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"
  int id = 0;        // CUfunction_attribute
  int value = 0;
  bool operator==(const FunctionAttributeSetting&) const = default;
};

// One entry of cuLaunchKernelEx's attribute list. Every value kjit sets is
// an int (one value) or three unsigned ints (x, y, z of CLUSTER_DIMENSION),
// stored from the start of CUlaunchAttributeValue.
struct LaunchAttributeSetting {
  std::string name;  // "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION"
  int id = 0;        // CUlaunchAttributeID
  std::vector<int> values;
  bool operator==(const LaunchAttributeSetting&) const = default;
};

struct LaunchPlan {
  std::string kernel;  // lowered name, as given to cuModuleGetFunction
  std::string target;  // "sm_90"
  Dim3 grid;           // normalized: no zero component
  Dim3 block;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t static_shared_bytes = 0;  // what the plan counted against the limits
  // Set on the function first, in this order (the shared-memory mode before
  // the size it allows), then the launch takes every launch attribute at once.
  std::vector<FunctionAttributeSetting> function_attributes;
  std::vector<LaunchAttributeSetting> launch_attributes;
  bool oversized_shared_memory = false;
  // The KernelInfo came from PTX, not from a cubin (a target the installed
  // toolkit cannot assemble for): registers and ptxas's layout are unknown.
  bool rests_on_ptx = false;
  std::vector<std::string> notes;  // assumptions and side effects, in words
};

enum class KernelInfoSource { cubin, ptx };

// Every launch rule: the 48 KiB dynamic shared memory threshold, the opt-in
// limit, sm_107's oversized mode with SPREAD cluster scheduling, clusters,
// cooperative and programmatic dependent launch. An impossible launch is ErrorCode::invalid_argument
// with the numbers; a shared memory overrun reads
//   "out of resource: shared memory: requires N bytes, limit M on sm_XX ..."
Result<LaunchPlan> plan_launch(const KernelInfo& kernel, const DeviceLimits& limits, const LaunchConfig& config,
                               KernelInfoSource source = KernelInfoSource::cubin);

// The plan as a person reads it (kjit plan without --json), one item a line.
std::string describe(const LaunchPlan& plan);

// "(2,1,1)"
std::string to_string(const Dim3& dims);

}  // namespace kjit
