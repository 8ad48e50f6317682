#include "client/cli/exit_codes.h"

#include <cstdio>
#include <string>

namespace kjit::cli {

int usage_error(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "kjit %s: %s\n", command.c_str(), message.c_str());
  return k_exit_usage;
}

int report_error(const Error& error, const std::string& socket_path) {
  if (error.code == ErrorCode::unavailable) {
    std::fprintf(stderr,
                 "kjit: cannot reach kjitd at %s: %s\n"
                 "hint: start the daemon with `make run` (or `kjitd --socket %s`), or point kjit at a running one "
                 "with --socket or KJIT_SOCKET\n",
                 socket_path.c_str(), error.message.c_str(), socket_path.c_str());
    return k_exit_unreachable;
  }
  std::fprintf(stderr, "kjit: %s: %s\n", std::string(to_string(error.code)).c_str(), error.message.c_str());
  if (!error.log.empty()) {
    std::fputs(error.log.c_str(), stderr);
    if (error.log.back() != '\n') std::fputc('\n', stderr);
  }
  return k_exit_compile_error;
}

}  // namespace kjit::cli
