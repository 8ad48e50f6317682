// Wall-clock time as the cache records it: whole seconds since the epoch
// (an entry's creation, a memory entry's last use, a Redis entry's age).
#pragma once

#include <chrono>
#include <cstdint>

namespace kjit {

inline int64_t unix_seconds_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace kjit
