// The AMD binding: the HIP runtime (libamdhip64) opened with dlopen and its
// C entry points bound with dlsym, never linked and without HIP headers, so
// kjit builds and runs on hosts without ROCm and reports failed_precondition
// "no HIP runtime on this host" when asked to launch there. It executes the
// same launch plans as the CUDA binding: what HIP cannot do (clusters, the
// oversized shared-memory mode, programmatic dependent launch) is refused
// with unimplemented before anything is launched.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "launch/driver_binding.h"

namespace kjit {

// What dlopen is given, in order, when no library is named: the unversioned
// development name, then the sonames of ROCm 6 and ROCm 5 (Debian ships 5.2.3).
inline constexpr const char* k_hip_runtime_libraries[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};

// Ok when HIP can execute `plan` as it stands; otherwise unimplemented
// "<feature> is not available on HIP (kernel K sets ATTRIBUTE = value, ...)".
// Supported: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (as
// hipFuncAttributeMaxDynamicSharedMemorySize), CU_LAUNCH_ATTRIBUTE_COOPERATIVE
// (as hipModuleLaunchCooperativeKernel) and CU_LAUNCH_ATTRIBUTE_PRIORITY (as
// the priority of the stream). A pure function: no runtime needed.
Status check_plan_supported_on_hip(const LaunchPlan& plan);

class HipDriver final : public DriverBinding {
 public:
  // Resolves one C entry point of the HIP runtime by name; nullptr if absent.
  using SymbolLookup = std::function<void*(const char* symbol)>;

  // Nothing is loaded until the first call. Calls run on HIP device
  // `device`, which each call makes current on its thread (hipSetDevice).
  // `library` is what dlopen is given; empty tries k_hip_runtime_libraries.
  explicit HipDriver(int device = 0, std::string library = {});
  // Binds the entry points through `lookup` instead of dlopen; `origin`
  // names the runtime in messages. Each symbol must have HIP's C signature:
  // this is how tests drive the binding with a fake runtime.
  HipDriver(int device, SymbolLookup lookup, std::string origin);
  // Destroys the streams the binding made for prioritized launches; destroy
  // before the process's exit handlers, as the runtime tears itself down there.
  ~HipDriver() override;

  std::string_view name() const override { return "hip"; }
  Status available() override;

  // Takes kjit's CUDA attribute ids (cuda_enums.h) and asks HIP for its own
  // counterpart: the ones limits_from_device reads are translated, any other
  // is unimplemented. CLUSTER_LAUNCH is 0 (HIP has no clusters).
  Result<int> device_attribute(int attribute) override;
  Result<FunctionHandle> get_function(ModuleHandle module, std::string_view name) override;
  // Only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES can be set.
  Status set_function_attribute(FunctionHandle function, int attribute, int value) override;
  // CUfunction_attribute ids 0-9, which HIP's hipFunction_attribute mirrors.
  Result<int> get_function_attribute(FunctionHandle function, int attribute) override;
  Result<int> max_active_blocks_per_sm(FunctionHandle function, uint32_t block_threads,
                                       uint32_t dynamic_shared_bytes) override;
  // hipModuleLaunchKernel, or hipModuleLaunchCooperativeKernel for a
  // cooperative plan (kernel parameters as LaunchArgs::params only: that call
  // has no packed form). HIP has no per-launch priority: a plan with one is
  // launched on the default stream's stand-in of that priority (one blocking
  // stream per priority, made on first use, ordered with the default stream
  // as the launch it replaces would be); on a stream of the caller's, that
  // stream's own priority (stream_create) applies.
  Status launch(FunctionHandle function, const LaunchPlan& plan, const LaunchArgs& args, StreamHandle stream) override;
  Result<DevicePtr> mem_alloc(size_t bytes) override;
  Status mem_free(DevicePtr pointer) override;
  Status copy_to_device(DevicePtr destination, std::span<const std::byte> source) override;
  Status copy_to_host(std::span<std::byte> destination, DevicePtr source) override;
  Result<StreamHandle> stream_create(int priority) override;
  Status stream_destroy(StreamHandle stream) override;
  Result<EventHandle> event_create() override;
  Status event_record(EventHandle event, StreamHandle stream) override;
  Status event_synchronize(EventHandle event) override;
  Result<float> event_elapsed_ms(EventHandle start, EventHandle end) override;
  Status event_destroy(EventHandle event) override;
  // hipDeviceSynchronize.
  Status synchronize() override;

 protected:
  Result<ModuleHandle> load_module_image(std::string_view image) override;

 private:
  struct State;  // the bound entry points, kept out of this header
  std::unique_ptr<State> state_;
};

}  // namespace kjit
