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

std::vector<std::string> toolkit_library_candidates(const std::string& cuda_home, const std::string& stem,
                                                    bool search_loader_path) {
  const std::vector<std::string> names{stem + ".so", stem + ".so.13", stem + ".so.12"};
  std::vector<std::string> candidates;
  for (const char* dir : {"/lib64/", "/lib/"})
    for (const std::string& name : names) candidates.push_back(cuda_home + dir + name);
  if (search_loader_path)
    candidates.insert(candidates.end(), {stem + ".so.13", stem + ".so.12", stem + ".so"});
  return candidates;
}

}  // namespace kjit
