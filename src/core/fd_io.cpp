#include "core/fd_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kjit {

int write_all(int fd, std::string_view bytes) {
  bool socket = true;  // until the descriptor says otherwise
  while (!bytes.empty()) {
    ssize_t n = socket ? ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) : ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == ENOTSOCK && socket) {
      socket = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // no progress and no error: never loop on it
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

Error io_error(std::string_view what, std::string_view path, int error_number) {
  return make_error(ErrorCode::internal,
                    std::string(what) + " " + std::string(path) + ": " + std::strerror(error_number));
}

}  // namespace kjit
