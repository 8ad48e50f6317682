// NVRTC's entry points, bound at run time from the toolkit's libnvrtc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kjit/status.h"

#if KJIT_HAVE_CUDA_HEADERS
#include <nvrtc.h>
#endif

namespace kjit {

struct NvrtcApi {
  std::string library_path;
  int major = 0, minor = 0;
  std::vector<uint32_t> supported_archs;  // nvrtcGetSupportedArchs: 75, 80, ...

#if KJIT_HAVE_CUDA_HEADERS
  decltype(&nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcGetNumSupportedArchs) get_num_supported_archs = nullptr;
  decltype(&nvrtcGetSupportedArchs) get_supported_archs = nullptr;
  decltype(&nvrtcCreateProgram) create_program = nullptr;
  decltype(&nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&nvrtcCompileProgram) compile_program = nullptr;
  decltype(&nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&nvrtcGetPTX) get_ptx = nullptr;
  decltype(&nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&nvrtcAddNameExpression) add_name_expression = nullptr;
  decltype(&nvrtcGetLoweredName) get_lowered_name = nullptr;
  // Precompiled headers (NVRTC 12.8 and newer); null in older ones, which
  // then compile without them.
  decltype(&nvrtcGetPCHHeapSize) get_pch_heap_size = nullptr;
  decltype(&nvrtcSetPCHHeapSize) set_pch_heap_size = nullptr;
  decltype(&nvrtcGetPCHCreateStatus) get_pch_create_status = nullptr;
#endif
};

// Loads libnvrtc from <cuda_home>/lib64 or /lib (toolkit_library_candidates),
// then (when asked) the loader's search path.
Result<std::shared_ptr<const NvrtcApi>> load_nvrtc(const std::string& cuda_home, bool search_loader_path);

}  // namespace kjit
