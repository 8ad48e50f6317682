// Atomic publication of a file: readers see either the previous file or the
// complete new one, never a partial write, even if the writer dies midway.
#pragma once

#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

// Temp files start with this, so a cleaner can tell a dead writer's leftover
// from a published file.
inline constexpr std::string_view k_atomic_temp_prefix = ".tmp-";

struct AtomicWriteOptions {
  // fsync the file before the rename and the directory after it, so a power
  // loss cannot publish a name that points at unwritten data. Off only for
  // bulk fills where durability does not matter (tests, imports).
  bool sync = true;
  // Permission bits of the published file, applied as given (no umask).
  unsigned mode = 0644;
};

// Writes bytes to a temp file in path's directory (which must exist), then
// renames it over path. On any failure the temp file is removed and path is
// left as it was.
Status write_file_atomically(const std::string& path, std::string_view bytes, AtomicWriteOptions options = {});

// True when a directory entry's name is one of write_file_atomically's temp files.
bool is_atomic_temp_name(std::string_view file_name);

// What a cleaner finds of a temp file: a live writer holds a lock on it
// (an open file description lock, which the kernel drops when the writer
// dies, however it dies) from its creation until after its rename.
enum class TempFileWriter {
  alive,    // its writer holds the lock: leave it
  dead,     // nobody holds it: the writer is gone, remove it
  unknown,  // cannot tell (not ours to open, or no such locks here)
};
// Looks at the temp file `name` in the directory `dir_fd`. A dead writer's
// file stays locked by this call until `held` is closed, so a writer that
// reached it meanwhile cannot take it back; the caller removes it first.
TempFileWriter temp_file_writer(int dir_fd, const char* name, int* held);

}  // namespace kjit
