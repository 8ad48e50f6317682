// Temp file + write + fsync + rename + directory fsync (see atomic_file.h).
#include "cache/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/fd_io.h"

namespace kjit {
namespace {

Status write_whole(int fd, std::string_view bytes, const std::string& path) {
  if (int error = write_all(fd, bytes); error != 0) return io_error("write", path, error);
  return Ok{};
}

Status sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open directory", dir, errno);
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  if (rc != 0) return io_error("fsync directory", dir, saved);
  return Ok{};
}

}  // namespace

Status write_file_atomically(const std::string& path, std::string_view bytes, AtomicWriteOptions options) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  // mkostemp picks a unique name, so concurrent writers of one path never
  // share a temp file; the last rename wins, and each rename is whole.
  std::string temp = dir + "/" + std::string(k_atomic_temp_prefix) + base + ".XXXXXX";
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return io_error("create temp file in", dir, errno);

  auto fail = [&](Error error) -> Status {
    ::close(fd);
    ::unlink(temp.c_str());
    return error;
  };
  // mkostemp creates 0600, which would hide entries from other users
  // sharing the directory. The umask is not consulted: reading it means
  // setting it, which races with other threads creating files.
  if (::fchmod(fd, options.mode) != 0) return fail(io_error("chmod", temp, errno));
  if (Status written = write_whole(fd, bytes, temp); !written) return fail(written.error());
  if (options.sync && ::fsync(fd) != 0) return fail(io_error("fsync", temp, errno));
  if (::close(fd) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return io_error("close", temp, saved);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return io_error("rename onto", path, saved);
  }
  // The rename is only durable once the directory is; failing here means the
  // entry is visible but might not survive a power loss, which a cache can
  // live with, so it is not reported.
  if (options.sync) (void)sync_directory(dir);
  return Ok{};
}

bool is_atomic_temp_name(std::string_view file_name) {
  return file_name.starts_with(k_atomic_temp_prefix);
}

}  // namespace kjit
