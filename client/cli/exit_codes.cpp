#include "client/cli/exit_codes.h"

#include <cstdio>
#include <string>

namespace kjit::cli {

int usage_error(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "kjit %s: %s\n", command.c_str(), message.c_str());
  return k_exit_usage;
}

int report_error(const Error& error, const std::string& target) {
  if (error.code == ErrorCode::unavailable) {
    std::fprintf(stderr, "kjit: cannot reach kjitd at %s: %s\n", target.c_str(), error.message.c_str());
    // A socket path has no port; anything else went over TCP.
    if (target.starts_with("unix:") || target.find(':') == std::string::npos)
      std::fprintf(stderr,
                   "hint: start the daemon with `make run` (or `kjitd --socket %s`), or point kjit at a running one "
                   "with --socket or KJIT_SOCKET (--address or KJIT_ADDRESS for TCP)\n",
                   target.c_str());
    else
      std::fprintf(stderr,
                   "hint: is kjitd listening there? Over TLS, --tls-ca must name the CA that signed its "
                   "certificate (and --tls-cert/--tls-key give one when it asks for a client certificate)\n");
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
