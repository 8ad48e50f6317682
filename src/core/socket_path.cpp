#include "kjit/socket_path.h"

#include <unistd.h>

#include <cstdlib>

namespace kjit {

std::string default_socket_path() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  if (runtime_dir && *runtime_dir) return std::string(runtime_dir) + "/kjit/kjitd.sock";
  return "/tmp/kjit-" + std::to_string(getuid()) + "/kjitd.sock";
}

std::string resolve_socket_path(std::string_view explicit_path) {
  if (!explicit_path.empty()) return std::string(explicit_path);
  const char* env = std::getenv("KJIT_SOCKET");
  if (env && *env) return env;
  return default_socket_path();
}

}  // namespace kjit
