// The CUDA driver binding of a build without cuda.h: every call answers
// FAILED_PRECONDITION saying kjit was built without CUDA headers, so such a
// build still starts and serves everything but launches.
#include <memory>

#include "launch/cuda_driver.h"
#include "launch/launch_plan.h"

namespace kjit {

namespace {
Error no_headers() {
  return make_error(ErrorCode::failed_precondition,
                    "no CUDA driver binding: kjit was built without CUDA headers (cuda.h)");
}
}  // namespace

struct CudaDriver::State {};

CudaDriver::CudaDriver(int, std::string) : state_(std::make_unique<State>()) {}
CudaDriver::~CudaDriver() = default;
Status CudaDriver::available() {
  return no_headers();
}
Result<int> CudaDriver::device_attribute(int) {
  return no_headers();
}
Result<ModuleHandle> CudaDriver::load_module_image(std::string_view) {
  return no_headers();
}
Result<FunctionHandle> CudaDriver::get_function(ModuleHandle, std::string_view) {
  return no_headers();
}
Status CudaDriver::set_function_attribute(FunctionHandle, int, int) {
  return no_headers();
}
Result<int> CudaDriver::get_function_attribute(FunctionHandle, int) {
  return no_headers();
}
Result<int> CudaDriver::max_active_blocks_per_sm(FunctionHandle, uint32_t, uint32_t) {
  return no_headers();
}
Status CudaDriver::launch(FunctionHandle, const LaunchPlan&, const LaunchArgs&, StreamHandle) {
  return no_headers();
}
Result<DevicePtr> CudaDriver::mem_alloc(size_t) {
  return no_headers();
}
Status CudaDriver::mem_free(DevicePtr) {
  return no_headers();
}
Status CudaDriver::copy_to_device(DevicePtr, std::span<const std::byte>) {
  return no_headers();
}
Status CudaDriver::copy_to_host(std::span<std::byte>, DevicePtr) {
  return no_headers();
}
Result<StreamHandle> CudaDriver::stream_create(int) {
  return no_headers();
}
Status CudaDriver::stream_destroy(StreamHandle) {
  return no_headers();
}
Result<EventHandle> CudaDriver::event_create() {
  return no_headers();
}
Status CudaDriver::event_record(EventHandle, StreamHandle) {
  return no_headers();
}
Status CudaDriver::event_synchronize(EventHandle) {
  return no_headers();
}
Result<float> CudaDriver::event_elapsed_ms(EventHandle, EventHandle) {
  return no_headers();
}
Status CudaDriver::event_destroy(EventHandle) {
  return no_headers();
}
Status CudaDriver::synchronize() {
  return no_headers();
}

}  // namespace kjit
