// The recording binding: fakes for every driver call, one line per call.
#include "launch/recording_driver.h"

#include <cstdio>
#include <cstring>
#include <iterator>

#include "launch/cuda_enums.h"
#include "launch/launch_plan.h"

namespace kjit {
namespace {

namespace ids = cuda_ids;

// Fake allocations are spaced like a driver's, so an overrun into the next
// allocation is caught rather than silently landing in it.
constexpr DevicePtr k_allocation_alignment = 256;

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string handle_text(const char* kind, uint64_t value) {
  return std::string(kind) + "#" + std::to_string(value);
}
std::string stream_text(StreamHandle stream) {
  return handle_text("stream", static_cast<uint64_t>(stream));
}

std::string launch_attribute_text(const LaunchAttributeSetting& attribute) {
  std::string text = attribute.name + "=";
  if (attribute.values.size() == 1) return text + std::to_string(attribute.values[0]);
  text += "(";
  for (size_t i = 0; i < attribute.values.size(); ++i) text += (i ? "," : "") + std::to_string(attribute.values[i]);
  return text + ")";
}

Error invalid_handle(const char* what, uint64_t value) {
  return make_error(ErrorCode::invalid_argument,
                    std::string("recording driver: invalid ") + what + " handle " + std::to_string(value));
}

}  // namespace

Status RecordingDriver::record(std::string_view call, std::string line) {
  calls_.push_back(std::move(line));
  auto failure = failures_.find(call);
  if (failure == failures_.end()) return Ok{};
  Error error = failure->second;
  failures_.erase(failure);
  calls_.back() += " -> error";
  return error;
}

std::vector<std::string> RecordingDriver::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

void RecordingDriver::clear_calls() {
  std::lock_guard lock(mutex_);
  calls_.clear();
}

void RecordingDriver::set_device_attribute(int attribute, int value) {
  std::lock_guard lock(mutex_);
  device_attributes_[attribute] = value;
}

void RecordingDriver::set_occupancy(int blocks_per_sm) {
  std::lock_guard lock(mutex_);
  occupancy_ = blocks_per_sm;
}

void RecordingDriver::fail_next(std::string call, Error error) {
  std::lock_guard lock(mutex_);
  failures_.insert_or_assign(std::move(call), std::move(error));
}

size_t RecordingDriver::live_allocations() const {
  std::lock_guard lock(mutex_);
  return memory_.size();
}

Result<int> RecordingDriver::device_attribute(int attribute) {
  std::lock_guard lock(mutex_);
  auto found = device_attributes_.find(attribute);
  std::string line = "cuDeviceGetAttribute(" + ids::device_attribute_name(attribute) + ")";
  if (found == device_attributes_.end()) {
    calls_.push_back(line + " -> error");
    return make_error(ErrorCode::invalid_argument,
                      "recording driver: device attribute " + ids::device_attribute_name(attribute) + " not set");
  }
  if (Status s = record("cuDeviceGetAttribute", line + " -> " + std::to_string(found->second)); !s) return s.error();
  return found->second;
}

Result<ModuleHandle> RecordingDriver::load_module_image(std::string_view image) {
  std::lock_guard lock(mutex_);
  const uint64_t handle = next_handle_++;
  std::string line = "cuModuleLoadData(" + std::to_string(image.size()) + " bytes) -> " + handle_text("mod", handle);
  if (Status s = record("cuModuleLoadData", std::move(line)); !s) return s.error();
  modules_.insert(handle);
  return ModuleHandle{handle};
}

Result<FunctionHandle> RecordingDriver::get_function(ModuleHandle module, std::string_view name) {
  std::lock_guard lock(mutex_);
  const auto module_id = static_cast<uint64_t>(module);
  if (!modules_.contains(module_id)) return invalid_handle("module", module_id);
  const uint64_t handle = next_handle_++;
  std::string line = "cuModuleGetFunction(" + handle_text("mod", module_id) + ", \"" + std::string(name) + "\") -> " +
                     handle_text("fn", handle);
  if (Status s = record("cuModuleGetFunction", std::move(line)); !s) return s.error();
  functions_[handle];
  return FunctionHandle{handle};
}

Status RecordingDriver::set_function_attribute(FunctionHandle function, int attribute, int value) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(function);
  auto found = functions_.find(id);
  if (found == functions_.end()) return invalid_handle("function", id);
  std::string line = "cuFuncSetAttribute(" + handle_text("fn", id) + ", " + ids::function_attribute_name(attribute) +
                     ", " + std::to_string(value) + ")";
  if (Status s = record("cuFuncSetAttribute", std::move(line)); !s) return s;
  found->second[attribute] = value;
  return Ok{};
}

Result<int> RecordingDriver::get_function_attribute(FunctionHandle function, int attribute) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(function);
  auto found = functions_.find(id);
  if (found == functions_.end()) return invalid_handle("function", id);
  auto value = found->second.find(attribute);
  const int result = value == found->second.end() ? 0 : value->second;
  std::string line = "cuFuncGetAttribute(" + handle_text("fn", id) + ", " + ids::function_attribute_name(attribute) +
                     ") -> " + std::to_string(result);
  if (Status s = record("cuFuncGetAttribute", std::move(line)); !s) return s.error();
  return result;
}

Result<int> RecordingDriver::max_active_blocks_per_sm(FunctionHandle function, uint32_t block_threads,
                                                      uint32_t dynamic_shared_bytes) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(function);
  if (!functions_.contains(id)) return invalid_handle("function", id);
  std::string line = "cuOccupancyMaxActiveBlocksPerMultiprocessor(" + handle_text("fn", id) + ", " +
                     std::to_string(block_threads) + ", " + std::to_string(dynamic_shared_bytes) + ") -> " +
                     std::to_string(occupancy_);
  if (Status s = record("cuOccupancyMaxActiveBlocksPerMultiprocessor", std::move(line)); !s) return s.error();
  return occupancy_;
}

Status RecordingDriver::launch(FunctionHandle function, const LaunchPlan& plan, const LaunchArgs& args,
                               StreamHandle stream) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(function);
  if (!functions_.contains(id)) return invalid_handle("function", id);
  const auto stream_id = static_cast<uint64_t>(stream);
  if (stream_id != 0 && !streams_.contains(stream_id)) return invalid_handle("stream", stream_id);
  std::string attributes;
  for (const auto& attribute : plan.launch_attributes) {
    attributes += (attributes.empty() ? "" : ", ") + launch_attribute_text(attribute);
  }
  std::string arguments;
  if (args.params) {
    arguments = "params";
  } else {
    arguments = "packed " + std::to_string(args.packed.size()) + " bytes";
  }
  std::string line = "cuLaunchKernelEx(" + handle_text("fn", id) + ", grid " + to_string(plan.grid) + ", block " +
                     to_string(plan.block) + ", shared " + std::to_string(plan.dynamic_shared_bytes) + ", " +
                     stream_text(stream) + ", [" + attributes + "], " + arguments + ")";
  return record("cuLaunchKernelEx", std::move(line));
}

Result<DevicePtr> RecordingDriver::mem_alloc(size_t bytes) {
  std::lock_guard lock(mutex_);
  const DevicePtr address = next_address_;
  std::string line = "cuMemAlloc(" + std::to_string(bytes) + ") -> " + hex(address);
  if (Status s = record("cuMemAlloc", std::move(line)); !s) return s.error();
  memory_.emplace(address, std::vector<std::byte>(bytes));
  next_address_ +=
      (bytes + k_allocation_alignment - 1) / k_allocation_alignment * k_allocation_alignment + k_allocation_alignment;
  return address;
}

Status RecordingDriver::mem_free(DevicePtr pointer) {
  std::lock_guard lock(mutex_);
  if (!memory_.contains(pointer)) {
    return make_error(ErrorCode::invalid_argument, "recording driver: cuMemFree of unallocated " + hex(pointer));
  }
  if (Status s = record("cuMemFree", "cuMemFree(" + hex(pointer) + ")"); !s) return s;
  memory_.erase(pointer);
  return Ok{};
}

std::vector<std::byte>* RecordingDriver::find_memory(DevicePtr pointer, size_t bytes, size_t& offset) {
  auto after = memory_.upper_bound(pointer);
  if (after == memory_.begin()) return nullptr;
  auto& [base, storage] = *std::prev(after);
  offset = pointer - base;
  if (offset > storage.size() || bytes > storage.size() - offset) return nullptr;
  return &storage;
}

Status RecordingDriver::copy_to_device(DevicePtr destination, std::span<const std::byte> source) {
  std::lock_guard lock(mutex_);
  size_t offset = 0;
  std::vector<std::byte>* storage = find_memory(destination, source.size(), offset);
  if (!storage) {
    return make_error(ErrorCode::invalid_argument, "recording driver: cuMemcpyHtoD of " +
                                                       std::to_string(source.size()) + " bytes to " + hex(destination) +
                                                       " is outside every allocation");
  }
  std::string line = "cuMemcpyHtoD(" + hex(destination) + ", " + std::to_string(source.size()) + " bytes)";
  if (Status s = record("cuMemcpyHtoD", std::move(line)); !s) return s;
  if (!source.empty()) std::memcpy(storage->data() + offset, source.data(), source.size());
  return Ok{};
}

Status RecordingDriver::copy_to_host(std::span<std::byte> destination, DevicePtr source) {
  std::lock_guard lock(mutex_);
  size_t offset = 0;
  std::vector<std::byte>* storage = find_memory(source, destination.size(), offset);
  if (!storage) {
    return make_error(ErrorCode::invalid_argument, "recording driver: cuMemcpyDtoH of " +
                                                       std::to_string(destination.size()) + " bytes from " +
                                                       hex(source) + " is outside every allocation");
  }
  std::string line = "cuMemcpyDtoH(" + hex(source) + ", " + std::to_string(destination.size()) + " bytes)";
  if (Status s = record("cuMemcpyDtoH", std::move(line)); !s) return s;
  if (!destination.empty()) std::memcpy(destination.data(), storage->data() + offset, destination.size());
  return Ok{};
}

Result<StreamHandle> RecordingDriver::stream_create(int priority) {
  std::lock_guard lock(mutex_);
  const uint64_t handle = next_handle_++;
  std::string line =
      "cuStreamCreateWithPriority(non-blocking, " + std::to_string(priority) + ") -> " + handle_text("stream", handle);
  if (Status s = record("cuStreamCreateWithPriority", std::move(line)); !s) return s.error();
  streams_.insert(handle);
  return StreamHandle{handle};
}

Status RecordingDriver::stream_destroy(StreamHandle stream) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(stream);
  if (!streams_.contains(id)) return invalid_handle("stream", id);
  if (Status s = record("cuStreamDestroy", "cuStreamDestroy(" + stream_text(stream) + ")"); !s) return s;
  streams_.erase(id);
  return Ok{};
}

Result<EventHandle> RecordingDriver::event_create() {
  std::lock_guard lock(mutex_);
  const uint64_t handle = next_handle_++;
  if (Status s = record("cuEventCreate", "cuEventCreate() -> " + handle_text("event", handle)); !s) return s.error();
  events_.insert(handle);
  return EventHandle{handle};
}

Status RecordingDriver::event_record(EventHandle event, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(event);
  if (!events_.contains(id)) return invalid_handle("event", id);
  return record("cuEventRecord", "cuEventRecord(" + handle_text("event", id) + ", " + stream_text(stream) + ")");
}

Status RecordingDriver::event_synchronize(EventHandle event) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(event);
  if (!events_.contains(id)) return invalid_handle("event", id);
  return record("cuEventSynchronize", "cuEventSynchronize(" + handle_text("event", id) + ")");
}

Result<float> RecordingDriver::event_elapsed_ms(EventHandle start, EventHandle end) {
  std::lock_guard lock(mutex_);
  const auto start_id = static_cast<uint64_t>(start);
  const auto end_id = static_cast<uint64_t>(end);
  if (!events_.contains(start_id)) return invalid_handle("event", start_id);
  if (!events_.contains(end_id)) return invalid_handle("event", end_id);
  std::string line = "cuEventElapsedTime(" + handle_text("event", start_id) + ", " + handle_text("event", end_id) + ")";
  if (Status s = record("cuEventElapsedTime", std::move(line)); !s) return s.error();
  return 0.0f;
}

Status RecordingDriver::event_destroy(EventHandle event) {
  std::lock_guard lock(mutex_);
  const auto id = static_cast<uint64_t>(event);
  if (!events_.contains(id)) return invalid_handle("event", id);
  if (Status s = record("cuEventDestroy", "cuEventDestroy(" + handle_text("event", id) + ")"); !s) return s;
  events_.erase(id);
  return Ok{};
}

Status RecordingDriver::synchronize() {
  std::lock_guard lock(mutex_);
  return record("cuCtxSynchronize", "cuCtxSynchronize()");
}

}  // namespace kjit
