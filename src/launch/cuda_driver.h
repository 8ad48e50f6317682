// The real CUDA binding: libcuda.so.1 opened with dlopen and its entry points
// bound with cuGetProcAddress, never linked, so kjit starts and compiles on
// hosts without a driver and reports failed_precondition "no CUDA driver on
// this host" when asked to launch there.
#pragma once

#include <memory>
#include <string>

#include "launch/driver_binding.h"

namespace kjit {

class CudaDriver final : public DriverBinding {
 public:
  // Nothing is loaded until the first call. Calls run in the primary context
  // of `device` (the one the CUDA runtime uses too), which each call makes
  // current on its thread. `library` is what dlopen is given.
  explicit CudaDriver(int device = 0, std::string library = "libcuda.so.1");
  // Releases the primary context; destroy before the process's exit handlers.
  ~CudaDriver() override;

  std::string_view name() const override { return "cuda"; }
  Status available() override;

  Result<int> device_attribute(int attribute) override;
  Result<FunctionHandle> get_function(ModuleHandle module, std::string_view name) override;
  Status set_function_attribute(FunctionHandle function, int attribute, int value) override;
  Result<int> get_function_attribute(FunctionHandle function, int attribute) override;
  Result<int> max_active_blocks_per_sm(FunctionHandle function, uint32_t block_threads,
                                       uint32_t dynamic_shared_bytes) override;
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
  Status synchronize() override;

 protected:
  Result<ModuleHandle> load_module_image(std::string_view image) override;

 private:
  struct State;  // the bound entry points; keeps cuda.h out of this header
  std::unique_ptr<State> state_;
};

}  // namespace kjit
