// A driver binding for CPU tests: records every call as one readable line
// ("cuFuncSetAttribute(fn#1, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 102400)")
// and fakes handles, device attributes and device memory, so tests can
// assert the exact sequence of driver calls a launch makes.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "launch/driver_binding.h"

namespace kjit {

class RecordingDriver final : public DriverBinding {
 public:
  std::string_view name() const override { return "recording"; }
  Status available() override { return Ok{}; }

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

  // Every call so far, in order, one line each.
  std::vector<std::string> calls() const;
  void clear_calls();

  // What device_attribute returns; an attribute never set is an error, as a
  // driver without it would give.
  void set_device_attribute(int attribute, int value);
  // What max_active_blocks_per_sm returns (default 1).
  void set_occupancy(int blocks_per_sm);
  // The next call to `call` (its cuda.h name, e.g. "cuLaunchKernelEx") is
  // recorded and then fails with `error`.
  void fail_next(std::string call, Error error);

  // Device allocations not yet freed: a test checks that none leaked.
  size_t live_allocations() const;

 protected:
  Result<ModuleHandle> load_module_image(std::string_view image) override;

 private:
  // Records `line`; returns the injected error for `call` if there is one.
  Status record(std::string_view call, std::string line);
  // The allocation holding [pointer, pointer + bytes), or nullptr.
  std::vector<std::byte>* find_memory(DevicePtr pointer, size_t bytes, size_t& offset);

  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
  std::map<std::string, Error, std::less<>> failures_;
  std::map<int, int> device_attributes_;
  int occupancy_ = 1;
  uint64_t next_handle_ = 1;
  std::set<uint64_t> modules_, streams_, events_;
  std::map<uint64_t, std::map<int, int>> functions_;  // handle -> attributes set
  DevicePtr next_address_ = 0x10000;
  std::map<DevicePtr, std::vector<std::byte>> memory_;
};

}  // namespace kjit
