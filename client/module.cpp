// Client-side launch through the CUDA driver binding and the launch planner.
#include "kjit/module.h"

#include <map>
#include <mutex>

#include "launch/cuda_driver.h"
#include "launch/device_limits.h"
#include "launch/plan_executor.h"
#include "metadata/ptx_reader.h"

namespace kjit {

struct Module::State {
  std::shared_ptr<CudaDriver> driver;
  ModuleHandle module{};
  std::vector<KernelInfo> kernels;
  KernelInfoSource source = KernelInfoSource::cubin;
  std::map<std::string, std::string> lowered_names;
  DeviceLimits limits;
};

namespace {

// One binding per device for the whole process: it keeps each module image
// loaded once, as the driver's context does.
std::shared_ptr<CudaDriver> driver_for(int device) {
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<CudaDriver>> drivers;
  std::lock_guard lock(mutex);
  auto& driver = drivers[device];
  if (!driver) driver = std::make_shared<CudaDriver>(device);
  return driver;
}

}  // namespace

Result<Module> Module::load(const CompileResult& result, int device) {
  auto state = std::make_shared<State>();
  state->driver = driver_for(device);
  if (Status s = state->driver->available(); !s) return s.error();
  Result<DeviceLimits> limits = limits_from_device(*state->driver);
  if (!limits) return limits.error();
  state->limits = *limits;
  Result<ModuleHandle> module = state->driver->load_module(result.artifact);
  if (!module) return module.error();
  state->module = *module;
  state->lowered_names = result.lowered_names;
  if (result.artifact_kind == ArtifactKind::ptx) {
    Result<PtxModule> ptx = read_ptx(result.artifact);
    if (!ptx) return ptx.error();
    for (const PtxKernel& k : ptx->kernels) state->kernels.push_back(k.info);
    state->source = KernelInfoSource::ptx;
  } else {
    state->kernels = result.kernels;
  }
  return Module(std::move(state));
}

Result<Kernel> Module::kernel(const std::string& name) const {
  std::string wanted = name;
  if (auto it = state_->lowered_names.find(name); it != state_->lowered_names.end()) wanted = it->second;
  for (const KernelInfo& info : state_->kernels) {
    if (info.name != name && info.lowered_name != wanted) continue;
    Result<FunctionHandle> function = state_->driver->get_function(state_->module, info.lowered_name);
    if (!function) return function.error();
    return Kernel(state_, info, static_cast<uint64_t>(*function));
  }
  return make_error(ErrorCode::not_found, "no kernel '" + name + "' in the module");
}

Result<std::string> Kernel::launch(const LaunchConfig& config, KernelArgs& args, void* stream) const {
  if (Status s = args.check_fits(info_); !s) return s.error();
  Result<LaunchPlan> plan = plan_and_launch(*state_->driver, FunctionHandle{function_}, info_, state_->limits, config,
                                            LaunchArgs{args.params(), args.bytes()},
                                            StreamHandle{reinterpret_cast<uintptr_t>(stream)}, state_->source);
  if (!plan) return plan.error();
  return describe(*plan);
}

}  // namespace kjit
