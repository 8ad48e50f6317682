#include "cache/cache_source.h"

#include <array>

namespace kjit {

std::string_view to_string(CacheSource source) {
  constexpr std::array<std::string_view, 6> k_names = {"memory", "disk", "redis", "reapi", "compiled", "joined"};
  const size_t i = static_cast<size_t>(source);
  return i < k_names.size() ? k_names[i] : "unknown";
}

}  // namespace kjit
