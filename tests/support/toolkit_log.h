// toolkit_log: a log NVRTC or nvJitLink hands out as its size, then its
// bytes (nvrtcGetProgramLog, nvJitLinkGetErrorLog, ...), as a string without
// the terminating NUL; empty when there is none or it cannot be read.
#pragma once

#include <cstddef>
#include <string>

namespace kjit::test {

template <typename Handle, typename Result, typename SizeOf, typename Copy>
std::string toolkit_log(Handle handle, Result success, SizeOf size_of, Copy copy) {
  size_t size = 0;
  if (size_of(handle, &size) != success || size <= 1) return {};
  std::string log(size, '\0');
  if (copy(handle, log.data()) != success) return {};
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

}  // namespace kjit::test
