// nvFatbin's entry points, bound at run time from a toolkit's libnvfatbin.
// nvFatbin.h is not among the headers kjit builds against (installed
// toolkits before 12.4 lack it, and the one found at configure time may), so
// the few prototypes kjit calls are declared here, as nvFatbin 12.4 and newer
// define them; their C ABI has been stable since.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kjit/status.h"

namespace kjit {

// nvFatbinHandle, an opaque pointer.
using NvFatbinHandle = struct NvFatbinHandleOpaque*;
// nvFatbinResult: a C enum, passed as an int; 0 is NVFATBIN_SUCCESS.
using NvFatbinResult = int;
inline constexpr NvFatbinResult k_nvfatbin_success = 0;

struct NvFatbinApi {
  std::string library_path;
  unsigned major = 0, minor = 0;

  const char* (*get_error_string)(NvFatbinResult result) = nullptr;
  NvFatbinResult (*version)(unsigned* major, unsigned* minor) = nullptr;
  NvFatbinResult (*create)(NvFatbinHandle* handle, const char** options, size_t options_count) = nullptr;
  NvFatbinResult (*destroy)(NvFatbinHandle* handle) = nullptr;
  NvFatbinResult (*add_ptx)(NvFatbinHandle handle, const char* code, size_t size, const char* arch,
                            const char* identifier, const char* options_cmd_line) = nullptr;
  NvFatbinResult (*add_cubin)(NvFatbinHandle handle, const void* code, size_t size, const char* arch,
                              const char* identifier) = nullptr;
  NvFatbinResult (*size)(NvFatbinHandle handle, size_t* size) = nullptr;
  NvFatbinResult (*get)(NvFatbinHandle handle, void* buffer) = nullptr;

  // nvFatbin's own words for `result`, or its number when it has none.
  std::string describe(NvFatbinResult result) const;
};

// Loads libnvfatbin from <cuda_home>/lib64 or /lib (toolkit_library_candidates),
// then (when asked) the loader's search path.
Result<std::shared_ptr<const NvFatbinApi>> load_nvfatbin(const std::string& cuda_home, bool search_loader_path);

}  // namespace kjit
