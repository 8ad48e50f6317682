// Client-side launch: load a compiled artifact (cubin, or PTX the driver
// JITs) into this process's CUDA context and launch its kernels with every
// attribute they need, as the planner says. The driver is loaded with dlopen;
// without one, load() fails with failed_precondition.
#pragma once

#include <memory>
#include <string>

#include "kjit/client.h"
#include "kjit/kernel_args.h"
#include "kjit/launch_config.h"

namespace kjit {

class Kernel;

class Module {
 public:
  // Loads result.artifact into device `device`'s primary context (the one
  // the CUDA runtime uses), once per process for the same bytes.
  static Result<Module> load(const CompileResult& result, int device = 0);

  // By source-level name ("scale<float>") or lowered name.
  Result<Kernel> kernel(const std::string& name) const;

  struct State;

 private:
  explicit Module(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

class Kernel {
 public:
  // Plans the launch against the device's limits, sets the function
  // attributes, then launches on `stream` (a CUstream; null = the default
  // stream). Returns the plan, described; an impossible launch is
  // invalid_argument before any driver call.
  Result<std::string> launch(const LaunchConfig& config, KernelArgs& args, void* stream = nullptr) const;

  const KernelInfo& info() const { return info_; }

 private:
  friend class Module;
  Kernel(std::shared_ptr<Module::State> state, KernelInfo info, uint64_t function)
      : state_(std::move(state)), info_(std::move(info)), function_(function) {}
  std::shared_ptr<Module::State> state_;
  KernelInfo info_;
  uint64_t function_ = 0;
};

}  // namespace kjit
