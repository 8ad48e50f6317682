// nvJitLink's entry points, bound at run time from the toolkit's libnvJitLink.
#pragma once

#include <memory>
#include <string>

#include "kjit/status.h"

#if KJIT_HAVE_CUDA_HEADERS
#include <nvJitLink.h>
#endif

namespace kjit {

struct NvJitLinkApi {
  std::string library_path;
  unsigned major = 0, minor = 0;

#if KJIT_HAVE_CUDA_HEADERS
  decltype(&nvJitLinkVersion) version = nullptr;
  decltype(&nvJitLinkCreate) create = nullptr;
  decltype(&nvJitLinkDestroy) destroy = nullptr;
  decltype(&nvJitLinkAddData) add_data = nullptr;
  decltype(&nvJitLinkComplete) complete = nullptr;
  decltype(&nvJitLinkGetLinkedCubinSize) get_linked_cubin_size = nullptr;
  decltype(&nvJitLinkGetLinkedCubin) get_linked_cubin = nullptr;
  decltype(&nvJitLinkGetErrorLogSize) get_error_log_size = nullptr;
  decltype(&nvJitLinkGetErrorLog) get_error_log = nullptr;
  decltype(&nvJitLinkGetInfoLogSize) get_info_log_size = nullptr;
  decltype(&nvJitLinkGetInfoLog) get_info_log = nullptr;
#endif
};

// Loads libnvJitLink from <cuda_home>/lib64 or /lib (toolkit_library_candidates),
// then (when asked) the loader's search path.
Result<std::shared_ptr<const NvJitLinkApi>> load_nvjitlink(const std::string& cuda_home, bool search_loader_path);

}  // namespace kjit
