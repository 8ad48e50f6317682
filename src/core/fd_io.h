// Writing to file descriptors, and the error that says an I/O call failed:
// one of each for the cache's files, the worker protocol's sockets and
// whatever else writes to a descriptor.
#pragma once

#include <string_view>

#include "kjit/status.h"

namespace kjit {

// Writes all of `bytes`, through short writes and EINTR. Returns 0, or the
// errno of the write that failed. On a socket whose peer is gone it fails
// with EPIPE instead of raising SIGPIPE.
int write_all(int fd, std::string_view bytes);

// An internal error "<what> <path>: <strerror(error_number)>", e.g.
// "rename /var/cache/kjit/x: No space left on device".
Error io_error(std::string_view what, std::string_view path, int error_number);

}  // namespace kjit
