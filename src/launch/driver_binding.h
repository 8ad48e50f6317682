// One interface for executing launch plans on a GPU driver: modules,
// functions and their attributes, cuLaunchKernelEx, memory, streams, events
// and device attributes. Implementations: the CUDA driver loaded with dlopen
// (cuda_driver.h) and a recording fake for CPU tests (recording_driver.h).
// Every call returns its error as a value; none throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

struct LaunchPlan;

// Opaque handles; what they hold is the binding's business (the CUDA binding
// keeps the driver's pointer). Zero is "none".
enum class ModuleHandle : uint64_t {};
enum class FunctionHandle : uint64_t {};
enum class StreamHandle : uint64_t {};  // zero is the context's default stream
enum class EventHandle : uint64_t {};
using DevicePtr = uint64_t;  // a device address, as kernels take it

inline constexpr StreamHandle k_default_stream{};

// Kernel parameters as cuLaunchKernelEx takes them: an array of pointers to
// each value (kernelParams), or one packed buffer laid out as the kernel's
// parameter block (passed through `extra`). Exactly one is used: `params`
// when it is set.
struct LaunchArgs {
  void** params = nullptr;
  std::span<const std::byte> packed;
};

class DriverBinding {
 public:
  DriverBinding() = default;
  DriverBinding(const DriverBinding&) = delete;
  DriverBinding& operator=(const DriverBinding&) = delete;
  virtual ~DriverBinding() = default;

  // "cuda", "recording": for logs.
  virtual std::string_view name() const = 0;

  // Ok when calls can reach a device; otherwise the reason, e.g.
  // failed_precondition "no CUDA driver on this host".
  virtual Status available() = 0;

  // cuDeviceGetAttribute on the binding's device.
  virtual Result<int> device_attribute(int attribute) = 0;

  // cuModuleLoadData, once per image: the binding owns one context, and the
  // same bytes again return the module already loaded there.
  Result<ModuleHandle> load_module(std::string_view image);

  // cuModuleGetFunction by lowered name.
  virtual Result<FunctionHandle> get_function(ModuleHandle module, std::string_view name) = 0;

  // cuFuncSetAttribute / cuFuncGetAttribute with CUfunction_attribute ids.
  virtual Status set_function_attribute(FunctionHandle function, int attribute, int value) = 0;
  virtual Result<int> get_function_attribute(FunctionHandle function, int attribute) = 0;

  // cuOccupancyMaxActiveBlocksPerMultiprocessor.
  virtual Result<int> max_active_blocks_per_sm(FunctionHandle function, uint32_t block_threads,
                                               uint32_t dynamic_shared_bytes) = 0;

  // cuLaunchKernelEx with the plan's grid, block, dynamic shared memory and
  // all of its launch attributes. Function attributes are not set here (see
  // plan_executor.h).
  virtual Status launch(FunctionHandle function, const LaunchPlan& plan, const LaunchArgs& args,
                        StreamHandle stream) = 0;

  // cuMemAlloc / cuMemFree / cuMemcpyHtoD / cuMemcpyDtoH (synchronous).
  virtual Result<DevicePtr> mem_alloc(size_t bytes) = 0;
  virtual Status mem_free(DevicePtr pointer) = 0;
  virtual Status copy_to_device(DevicePtr destination, std::span<const std::byte> source) = 0;
  virtual Status copy_to_host(std::span<std::byte> destination, DevicePtr source) = 0;

  // cuStreamCreateWithPriority (non-blocking stream) / cuStreamDestroy.
  virtual Result<StreamHandle> stream_create(int priority) = 0;
  virtual Status stream_destroy(StreamHandle stream) = 0;

  // Timing events: cuEventCreate / Record / Synchronize / ElapsedTime / Destroy.
  virtual Result<EventHandle> event_create() = 0;
  virtual Status event_record(EventHandle event, StreamHandle stream) = 0;
  virtual Status event_synchronize(EventHandle event) = 0;
  virtual Result<float> event_elapsed_ms(EventHandle start, EventHandle end) = 0;
  virtual Status event_destroy(EventHandle event) = 0;

  // cuCtxSynchronize: waits for all work; reports errors of earlier launches.
  virtual Status synchronize() = 0;

 protected:
  // The uncached cuModuleLoadData behind load_module.
  virtual Result<ModuleHandle> load_module_image(std::string_view image) = 0;

 private:
  // Keyed by the image bytes themselves: a hash collision would run the
  // wrong code, and the images are small next to what the driver keeps.
  std::mutex modules_mutex_;
  std::map<std::string, ModuleHandle, std::less<>> modules_;
};

// The lock is held across the load so that two threads with the same image
// load it once.
inline Result<ModuleHandle> DriverBinding::load_module(std::string_view image) {
  std::lock_guard lock(modules_mutex_);
  if (auto it = modules_.find(image); it != modules_.end()) return it->second;
  Result<ModuleHandle> module = load_module_image(image);
  if (module) modules_.emplace(std::string(image), *module);
  return module;
}

}  // namespace kjit
