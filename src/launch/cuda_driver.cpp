// The CUDA driver binding: dlopen("libcuda.so.1"), cuDriverGetVersion and
// cuGetProcAddress_v2 from dlsym, every other entry point through
// cuGetProcAddress at the ABI of the headers we compile with (or the
// driver's own version, if older). Built when cuda.h is there; without it,
// cuda_driver_without_headers.cpp stands in.
#include <cuda.h>  // before cuda_enums.h, which defines what this cuda.h lacks

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "launch/cuda_driver.h"
#include "launch/cuda_enums.h"
#include "launch/launch_plan.h"

namespace kjit {

namespace ids = cuda_ids;

// The ids kjit spells itself (cuda_enums.h), checked against the cuda.h we
// build with.
static_assert(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK == ids::k_func_max_threads_per_block);
static_assert(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES == ids::k_func_shared_size_bytes);
static_assert(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == ids::k_func_max_dynamic_shared_size_bytes);
static_assert(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED == ids::k_func_non_portable_cluster_size_allowed);
static_assert(CU_LAUNCH_ATTRIBUTE_COOPERATIVE == ids::k_launch_cooperative);
static_assert(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION == ids::k_launch_cluster_dimension);
static_assert(CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE ==
              ids::k_launch_cluster_scheduling_policy_preference);
static_assert(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION == ids::k_launch_programmatic_stream_serialization);
static_assert(CU_LAUNCH_ATTRIBUTE_PRIORITY == ids::k_launch_priority);
static_assert(CU_CLUSTER_SCHEDULING_POLICY_SPREAD == ids::k_cluster_scheduling_spread);
static_assert(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK == ids::k_device_max_threads_per_block);
static_assert(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK == ids::k_device_max_shared_memory_per_block);
static_assert(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == ids::k_device_multiprocessor_count);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == ids::k_device_compute_capability_major);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == ids::k_device_compute_capability_minor);
static_assert(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR ==
              ids::k_device_max_shared_memory_per_multiprocessor);
static_assert(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH == ids::k_device_cooperative_launch);
static_assert(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN == ids::k_device_max_shared_memory_per_block_optin);
static_assert(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR == ids::k_device_max_blocks_per_multiprocessor);
static_assert(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK == ids::k_device_reserved_shared_memory_per_block);
static_assert(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH == ids::k_device_cluster_launch);

namespace {

// cuGetProcAddress_v2 and cuLaunchKernelEx arrived by CUDA 12.0.
constexpr int k_min_driver_version = 12000;

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using DriverGetVersion = CUresult (*)(int*);

// The entry points, typed as the cuda.h we compile with declares them
// (cuMemAlloc is cuMemAlloc_v2 there, and cuGetProcAddress returns that ABI).
struct Api {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuStreamCreateWithPriority) stream_create_with_priority = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_active_blocks = nullptr;
};

ErrorCode code_of(CUresult result) {
  switch (result) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return ErrorCode::failed_precondition;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return ErrorCode::resource_exhausted;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_INVALID_CLUSTER_SIZE:
    case CUDA_ERROR_NOT_SUPPORTED:
      return ErrorCode::invalid_argument;
    case CUDA_ERROR_NOT_FOUND:
      return ErrorCode::not_found;
    default:
      return ErrorCode::internal;
  }
}

template <typename Handle, typename Pointer>
Handle handle_of(Pointer pointer) {
  return static_cast<Handle>(reinterpret_cast<uintptr_t>(pointer));
}

template <typename Pointer, typename Handle>
Pointer pointer_of(Handle handle) {
  return reinterpret_cast<Pointer>(static_cast<uintptr_t>(handle));
}

}  // namespace

struct CudaDriver::State {
  int ordinal = 0;
  std::string library;
  std::once_flag opened;
  Status open_status = make_error(ErrorCode::internal, "CUDA driver not opened");
  Api api;
  CUdevice device = 0;
  CUcontext context = nullptr;

  // "cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE (invalid argument)".
  Error error(const char* call, CUresult result) const {
    const char* name = nullptr;
    if (api.get_error_name) api.get_error_name(result, &name);
    return make_error(code_of(result), std::string(call) + ": " + (name ? name : "CUresult " + std::to_string(result)));
  }

  Status check(const char* call, CUresult result) const {
    if (result == CUDA_SUCCESS) return Ok{};
    return error(call, result);
  }

  Status open() {
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return make_error(ErrorCode::failed_precondition,
                        "no CUDA driver on this host (" + library + ": " + (why ? why : "not loadable") + ")");
    }
    // The driver stays loaded for the process's life, like every toolchain
    // library kjit opens: it keeps process-wide state.
    auto get_version = reinterpret_cast<DriverGetVersion>(dlsym(handle, "cuDriverGetVersion"));
    auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
    int version = 0;
    if (!get_version || get_version(&version) != CUDA_SUCCESS || !get_proc || version < k_min_driver_version) {
      return make_error(ErrorCode::failed_precondition,
                        "the CUDA driver in " + library + " is too old (version " + std::to_string(version) +
                            "): kjit needs 12.0 or newer (cuGetProcAddress_v2, cuLaunchKernelEx)");
    }
    const int abi = std::min(version, CUDA_VERSION);
    std::string missing;
    auto bind = [&](const char* symbol, auto& fn) {
      void* address = nullptr;
      CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      if (get_proc(symbol, &address, abi, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS || !address ||
          found != CU_GET_PROC_ADDRESS_SUCCESS) {
        missing += missing.empty() ? symbol : std::string(", ") + symbol;
        return;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(address);
    };
    bind("cuGetErrorName", api.get_error_name);
    bind("cuInit", api.init);
    bind("cuDeviceGet", api.device_get);
    bind("cuDeviceGetAttribute", api.device_get_attribute);
    bind("cuDevicePrimaryCtxRetain", api.primary_ctx_retain);
    bind("cuDevicePrimaryCtxRelease", api.primary_ctx_release);
    bind("cuCtxGetCurrent", api.ctx_get_current);
    bind("cuCtxSetCurrent", api.ctx_set_current);
    bind("cuCtxSynchronize", api.ctx_synchronize);
    bind("cuModuleLoadData", api.module_load_data);
    bind("cuModuleGetFunction", api.module_get_function);
    bind("cuFuncSetAttribute", api.func_set_attribute);
    bind("cuFuncGetAttribute", api.func_get_attribute);
    bind("cuLaunchKernelEx", api.launch_kernel_ex);
    bind("cuMemAlloc", api.mem_alloc);
    bind("cuMemFree", api.mem_free);
    bind("cuMemcpyHtoD", api.memcpy_htod);
    bind("cuMemcpyDtoH", api.memcpy_dtoh);
    bind("cuStreamCreateWithPriority", api.stream_create_with_priority);
    bind("cuStreamDestroy", api.stream_destroy);
    bind("cuEventCreate", api.event_create);
    bind("cuEventRecord", api.event_record);
    bind("cuEventSynchronize", api.event_synchronize);
    bind("cuEventElapsedTime", api.event_elapsed_time);
    bind("cuEventDestroy", api.event_destroy);
    bind("cuOccupancyMaxActiveBlocksPerMultiprocessor", api.occupancy_max_active_blocks);
    if (!missing.empty()) {
      return make_error(ErrorCode::failed_precondition, "the CUDA driver in " + library + " (version " +
                                                            std::to_string(version) + ") lacks " + missing);
    }
    if (CUresult r = api.init(0); r != CUDA_SUCCESS) {
      Error e = error("cuInit", r);
      e.code = ErrorCode::failed_precondition;
      e.message = "no usable CUDA device: " + e.message;
      return e;
    }
    if (Status s = check("cuDeviceGet", api.device_get(&device, ordinal)); !s) return s;
    return check("cuDevicePrimaryCtxRetain", api.primary_ctx_retain(&context, device));
  }

  // Opens once; then makes the primary context current on this thread, since
  // a context is per thread and the daemon calls from many.
  Status ready() {
    std::call_once(opened, [this] { open_status = open(); });
    if (!open_status) return open_status;
    CUcontext current = nullptr;
    if (api.ctx_get_current(&current) == CUDA_SUCCESS && current == context) return Ok{};
    return check("cuCtxSetCurrent", api.ctx_set_current(context));
  }
};

CudaDriver::CudaDriver(int device, std::string library) : state_(std::make_unique<State>()) {
  state_->ordinal = device;
  state_->library = std::move(library);
}

CudaDriver::~CudaDriver() {
  if (state_->context && state_->api.primary_ctx_release) state_->api.primary_ctx_release(state_->device);
}

Status CudaDriver::available() {
  return state_->ready();
}

Result<int> CudaDriver::device_attribute(int attribute) {
  if (Status s = state_->ready(); !s) return s.error();
  int value = 0;
  CUresult r = state_->api.device_get_attribute(&value, static_cast<CUdevice_attribute>(attribute), state_->device);
  if (r != CUDA_SUCCESS) return state_->error("cuDeviceGetAttribute", r);
  return value;
}

Result<ModuleHandle> CudaDriver::load_module_image(std::string_view image) {
  if (Status s = state_->ready(); !s) return s.error();
  // cuModuleLoadData reads PTX up to its terminating NUL; a cubin or fatbin
  // carries its own size. A copy with a NUL after it serves both.
  std::string terminated(image);
  CUmodule module = nullptr;
  if (CUresult r = state_->api.module_load_data(&module, terminated.c_str()); r != CUDA_SUCCESS) {
    return state_->error("cuModuleLoadData", r);
  }
  return handle_of<ModuleHandle>(module);
}

Result<FunctionHandle> CudaDriver::get_function(ModuleHandle module, std::string_view name) {
  if (Status s = state_->ready(); !s) return s.error();
  CUfunction function = nullptr;
  std::string symbol(name);
  CUresult r = state_->api.module_get_function(&function, pointer_of<CUmodule>(module), symbol.c_str());
  if (r != CUDA_SUCCESS) {
    Error e = state_->error("cuModuleGetFunction", r);
    e.message += " (kernel '" + symbol + "')";
    return e;
  }
  return handle_of<FunctionHandle>(function);
}

Status CudaDriver::set_function_attribute(FunctionHandle function, int attribute, int value) {
  if (Status s = state_->ready(); !s) return s;
  CUresult r = state_->api.func_set_attribute(pointer_of<CUfunction>(function),
                                              static_cast<CUfunction_attribute>(attribute), value);
  if (r == CUDA_SUCCESS) return Ok{};
  Error e = state_->error("cuFuncSetAttribute", r);
  e.message += " (" + ids::function_attribute_name(attribute) + " = " + std::to_string(value) + ")";
  return e;
}

Result<int> CudaDriver::get_function_attribute(FunctionHandle function, int attribute) {
  if (Status s = state_->ready(); !s) return s.error();
  int value = 0;
  CUresult r = state_->api.func_get_attribute(&value, static_cast<CUfunction_attribute>(attribute),
                                              pointer_of<CUfunction>(function));
  if (r != CUDA_SUCCESS) return state_->error("cuFuncGetAttribute", r);
  return value;
}

Result<int> CudaDriver::max_active_blocks_per_sm(FunctionHandle function, uint32_t block_threads,
                                                 uint32_t dynamic_shared_bytes) {
  if (Status s = state_->ready(); !s) return s.error();
  int blocks = 0;
  CUresult r = state_->api.occupancy_max_active_blocks(&blocks, pointer_of<CUfunction>(function),
                                                       static_cast<int>(block_threads), dynamic_shared_bytes);
  if (r != CUDA_SUCCESS) return state_->error("cuOccupancyMaxActiveBlocksPerMultiprocessor", r);
  return blocks;
}

Status CudaDriver::launch(FunctionHandle function, const LaunchPlan& plan, const LaunchArgs& args,
                          StreamHandle stream) {
  if (Status s = state_->ready(); !s) return s;
  // Every value kjit plans is ints from the start of the value union
  // (int, enum, or clusterDim's three unsigned ints).
  std::vector<CUlaunchAttribute> attributes(plan.launch_attributes.size());
  for (size_t i = 0; i < attributes.size(); ++i) {
    const LaunchAttributeSetting& setting = plan.launch_attributes[i];
    if (setting.values.size() * sizeof(int) > sizeof(attributes[i].value)) {
      return make_error(ErrorCode::internal, "launch attribute " + setting.name + " has too many values");
    }
    std::memset(&attributes[i], 0, sizeof(attributes[i]));
    attributes[i].id = static_cast<CUlaunchAttributeID>(setting.id);
    std::memcpy(&attributes[i].value, setting.values.data(), setting.values.size() * sizeof(int));
  }
  CUlaunchConfig config{};
  config.gridDimX = plan.grid.x;
  config.gridDimY = plan.grid.y;
  config.gridDimZ = plan.grid.z;
  config.blockDimX = plan.block.x;
  config.blockDimY = plan.block.y;
  config.blockDimZ = plan.block.z;
  config.sharedMemBytes = plan.dynamic_shared_bytes;
  config.hStream = pointer_of<CUstream>(stream);
  config.attrs = attributes.empty() ? nullptr : attributes.data();
  config.numAttrs = static_cast<unsigned>(attributes.size());

  size_t packed_size = args.packed.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::byte*>(args.packed.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size, CU_LAUNCH_PARAM_END};
  const bool use_packed = !args.params && !args.packed.empty();
  CUresult r = state_->api.launch_kernel_ex(&config, pointer_of<CUfunction>(function), args.params,
                                            use_packed ? extra : nullptr);
  if (r != CUDA_SUCCESS) {
    Error e = state_->error("cuLaunchKernelEx", r);
    e.message += " (kernel " + plan.kernel + ")";
    return e;
  }
  return Ok{};
}

Result<DevicePtr> CudaDriver::mem_alloc(size_t bytes) {
  if (Status s = state_->ready(); !s) return s.error();
  CUdeviceptr pointer = 0;
  if (CUresult r = state_->api.mem_alloc(&pointer, bytes); r != CUDA_SUCCESS) {
    Error e = state_->error("cuMemAlloc", r);
    e.message += " (" + std::to_string(bytes) + " bytes)";
    return e;
  }
  return static_cast<DevicePtr>(pointer);
}

Status CudaDriver::mem_free(DevicePtr pointer) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuMemFree", state_->api.mem_free(static_cast<CUdeviceptr>(pointer)));
}

Status CudaDriver::copy_to_device(DevicePtr destination, std::span<const std::byte> source) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuMemcpyHtoD",
                       state_->api.memcpy_htod(static_cast<CUdeviceptr>(destination), source.data(), source.size()));
}

Status CudaDriver::copy_to_host(std::span<std::byte> destination, DevicePtr source) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuMemcpyDtoH", state_->api.memcpy_dtoh(destination.data(), static_cast<CUdeviceptr>(source),
                                                               destination.size()));
}

Result<StreamHandle> CudaDriver::stream_create(int priority) {
  if (Status s = state_->ready(); !s) return s.error();
  CUstream stream = nullptr;
  CUresult r = state_->api.stream_create_with_priority(&stream, CU_STREAM_NON_BLOCKING, priority);
  if (r != CUDA_SUCCESS) return state_->error("cuStreamCreateWithPriority", r);
  return handle_of<StreamHandle>(stream);
}

Status CudaDriver::stream_destroy(StreamHandle stream) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuStreamDestroy", state_->api.stream_destroy(pointer_of<CUstream>(stream)));
}

Result<EventHandle> CudaDriver::event_create() {
  if (Status s = state_->ready(); !s) return s.error();
  CUevent event = nullptr;
  if (CUresult r = state_->api.event_create(&event, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
    return state_->error("cuEventCreate", r);
  }
  return handle_of<EventHandle>(event);
}

Status CudaDriver::event_record(EventHandle event, StreamHandle stream) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuEventRecord",
                       state_->api.event_record(pointer_of<CUevent>(event), pointer_of<CUstream>(stream)));
}

Status CudaDriver::event_synchronize(EventHandle event) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuEventSynchronize", state_->api.event_synchronize(pointer_of<CUevent>(event)));
}

Result<float> CudaDriver::event_elapsed_ms(EventHandle start, EventHandle end) {
  if (Status s = state_->ready(); !s) return s.error();
  float ms = 0;
  CUresult r = state_->api.event_elapsed_time(&ms, pointer_of<CUevent>(start), pointer_of<CUevent>(end));
  if (r != CUDA_SUCCESS) return state_->error("cuEventElapsedTime", r);
  return ms;
}

Status CudaDriver::event_destroy(EventHandle event) {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuEventDestroy", state_->api.event_destroy(pointer_of<CUevent>(event)));
}

Status CudaDriver::synchronize() {
  if (Status s = state_->ready(); !s) return s;
  return state_->check("cuCtxSynchronize", state_->api.ctx_synchronize());
}

}  // namespace kjit
