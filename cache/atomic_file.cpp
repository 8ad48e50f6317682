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

// Read and write locks on the whole file, owned by the open file description.
bool lock_whole_file(int fd, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0;
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
  std::string temp;
  int fd = -1;
  // The lock says "a writer is alive" to cleaners. A cleaner may lock a file
  // between its creation and our lock, taking it for a dead writer's: then
  // it is the cleaner's to remove (it unlinks it before it lets go), and
  // this writer starts another, whether the cleaner still holds the file
  // or has removed it already. A scan can win that race often on a loaded
  // machine (measured: more than every second file while one scans without
  // pause), so a writer tries many names before it gives up.
  constexpr int k_attempts = 64;
  for (int attempt = 0; attempt < k_attempts && fd < 0; ++attempt) {
    temp = dir + "/" + std::string(k_atomic_temp_prefix) + base + ".XXXXXX";
    fd = ::mkostemp(temp.data(), O_CLOEXEC);
    if (fd < 0) return io_error("create temp file in", dir, errno);
    struct stat st {};
    const bool locked = lock_whole_file(fd, F_WRLCK);
    const bool taken = locked ? ::fstat(fd, &st) == 0 && st.st_nlink == 0 : errno == EAGAIN || errno == EACCES;
    if (taken) {
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) return make_error(ErrorCode::unavailable, "every temp file in " + dir + " was taken by a cleaner");

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
  // Renamed while still open and locked, so no cleaner takes it for a dead
  // writer's between the close and the rename.
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail(io_error("rename onto", path, errno));
  if (::close(fd) != 0 && !options.sync) {
    // Unsynced data may not have reached the file: what was published may
    // be short, so it goes (synced data was checked by fsync already).
    int saved = errno;
    ::unlink(path.c_str());
    return io_error("close", path, saved);
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

TempFileWriter temp_file_writer(int dir_fd, const char* name, int* held) {
  *held = -1;
  // Read-only is enough for a read lock, which conflicts with the writer's
  // write lock, so another user's temp file can be judged too where it is
  // readable.
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return TempFileWriter::unknown;
  if (lock_whole_file(fd, F_RDLCK)) {
    *held = fd;
    return TempFileWriter::dead;
  }
  const int error = errno;
  ::close(fd);
  return error == EAGAIN || error == EACCES ? TempFileWriter::alive : TempFileWriter::unknown;
}

}  // namespace kjit
