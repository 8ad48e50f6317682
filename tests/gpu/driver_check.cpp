#include "driver_check.h"

#include <dlfcn.h>

namespace kjit::test {
namespace {

template <typename Fn>
bool bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

Driver load() {
  Driver d;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    d.why_not = "no CUDA driver on this host (libcuda.so.1 not loadable)";
    return d;
  }
  bool ok = bind(lib, "cuInit", d.init) && bind(lib, "cuDeviceGet", d.device_get) &&
            bind(lib, "cuDeviceGetAttribute", d.device_get_attribute) &&
            bind(lib, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain) &&
            bind(lib, "cuCtxSetCurrent", d.ctx_set_current) && bind(lib, "cuModuleLoadData", d.module_load_data) &&
            bind(lib, "cuModuleUnload", d.module_unload) && bind(lib, "cuModuleGetFunction", d.module_get_function) &&
            bind(lib, "cuFuncGetAttribute", d.func_get_attribute) && bind(lib, "cuMemAlloc_v2", d.mem_alloc) &&
            bind(lib, "cuMemFree_v2", d.mem_free) && bind(lib, "cuMemcpyHtoD_v2", d.memcpy_htod) &&
            bind(lib, "cuMemcpyDtoH_v2", d.memcpy_dtoh) && bind(lib, "cuLaunchKernel", d.launch_kernel) &&
            bind(lib, "cuCtxSynchronize", d.ctx_synchronize);
  if (!ok) {
    d.why_not = "libcuda.so.1 lacks a driver entry point the device tests use";
    return d;
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (d.init(0) != CUDA_SUCCESS || d.device_get(&device, 0) != CUDA_SUCCESS ||
      d.primary_ctx_retain(&context, device) != CUDA_SUCCESS || d.ctx_set_current(context) != CUDA_SUCCESS) {
    d.why_not = "the CUDA driver loaded but no device could be opened";
    return d;
  }
  d.loaded = true;
  return d;
}

}  // namespace

const Driver& driver() {
  static const Driver d = load();
  return d;
}

int device_sm() {
  int major = 0, minor = 0;
  CUdevice device = 0;
  driver().device_get(&device, 0);
  driver().device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  driver().device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  return major * 10 + minor;
}

}  // namespace kjit::test
