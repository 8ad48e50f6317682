// A minimal CUDA driver binding for the device tests only: dlopen of
// libcuda.so.1, the handful of calls the tests need. The launch planner's
// real driver binding comes with the launch issue; this exists so that the
// device tests can check what kjit reports against what the driver says.
#pragma once

#include <cuda.h>

#include <string>

namespace kjit::test {

struct Driver {
  bool loaded = false;
  std::string why_not;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*func_get_attribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
};

// Loads the driver and makes device 0's primary context current.
const Driver& driver();

// Device 0's compute capability as an SM number (90 for 9.0); needs driver().loaded.
int device_sm();

}  // namespace kjit::test
