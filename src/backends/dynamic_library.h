// A shared library opened at run time, so optional toolchains (NVRTC,
// nvJitLink, later HIPRTC and the driver) are found when present and their
// absence is an error value, never a link or start-up failure.
#pragma once

#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit {

class DynamicLibrary {
 public:
  // Opens the first candidate that loads; the error lists every attempt.
  static Result<DynamicLibrary> open_first(const std::vector<std::string>& candidates);

  // Looks a symbol up; false (and fn untouched) when it is missing.
  template <typename Fn>
  bool bind(const char* name, Fn& fn) const {
    void* address = symbol(name);
    if (!address) return false;
    fn = reinterpret_cast<Fn>(address);
    return true;
  }

  const std::string& path() const { return path_; }

 private:
  void* symbol(const char* name) const;

  // Toolchain libraries are never closed: they keep process-wide state
  // (thread-locals, atexit handlers) that does not survive dlclose.
  void* handle_ = nullptr;
  std::string path_;
};

// Where a toolkit keeps `stem` (e.g. "libnvrtc"): <cuda_home>/lib64 (the
// CUDA installer's layout) or <cuda_home>/lib (NVIDIA's Python wheels,
// nvidia/cu13/lib), unversioned or by major version; then, when asked, the
// same names on the loader's search path.
std::vector<std::string> toolkit_library_candidates(const std::string& cuda_home, const std::string& stem,
                                                    bool search_loader_path);

}  // namespace kjit
