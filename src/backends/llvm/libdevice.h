// Pass "libdevice-link": links the functions of libdevice (the toolkit's
// nvvm/libdevice/libdevice.10.bc) that a module calls (__nv_sinf, ...), as
// clang's CUDA path does: only what is needed, internalised so that the
// optimizer inlines it and drops the rest.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/llvm/llvm_module.h"

namespace kjit {

struct LibdeviceRequest {
  std::string_view ir;  // text or bitcode
  std::string_view name;
  LlvmTarget target;
  std::string libdevice_path;  // empty when the toolkit has none
};

struct LibdeviceResult {
  std::string ir;                   // the input itself when nothing was linked
  std::vector<std::string> linked;  // the __nv_* functions the module called
};

// A module that calls no __nv_* function comes back unchanged (without being
// parsed when its bytes never spell "__nv_"). One that does, on a toolkit
// without libdevice, is failed_precondition. Calls libdevice does not define
// stay undefined, for the link to report by name.
Result<LibdeviceResult> link_libdevice(const LibdeviceRequest& request);

// The __nv_* functions a module declares and uses, sorted.
std::vector<std::string> libdevice_calls(const llvm::Module& module);

}  // namespace kjit
