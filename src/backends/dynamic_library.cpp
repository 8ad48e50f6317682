#include "backends/dynamic_library.h"

#include <dlfcn.h>

namespace kjit {

Result<DynamicLibrary> DynamicLibrary::open_first(const std::vector<std::string>& candidates) {
  std::string attempts;
  for (const std::string& candidate : candidates) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      DynamicLibrary library;
      library.handle_ = handle;
      library.path_ = candidate;
      return library;
    }
    const char* why = dlerror();
    attempts += "\n  " + candidate + ": " + (why ? why : "not loadable");
  }
  return make_error(ErrorCode::failed_precondition, "could not load any of:" + attempts);
}

void* DynamicLibrary::symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

}  // namespace kjit
