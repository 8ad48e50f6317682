// NVRTC's automatic precompiled headers (-pch) in a long-lived process: a
// compile worker turns them on once, with a directory of its own, and every
// later CUDA C++ compile of the process reuses the headers an earlier one
// parsed. The first compile of a header set in the process writes its PCH,
// which costs NVRTC a third to a half of a compile more on heavy headers
// (CUB, cuda::std) and next to nothing on light ones; every later compile
// of the set uses it, at about a quarter of a compile. A PCH lives in
// NVRTC's heap at a fixed address, so it serves only the process that wrote
// it; the files are bounded in bytes, least recently used first out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kjit {

struct NvrtcPchSettings {
  std::string directory;    // private to this process, kept across its compiles
  uint64_t max_bytes = 0;   // the PCH files together; 0: no bound
  uint64_t heap_bytes = 0;  // NVRTC's PCH heap (one PCH's size at most); 0: NVRTC's default
};

// What automatic PCH did in this process since it was turned on.
struct NvrtcPchCounts {
  uint64_t hits = 0;       // compiles that used a PCH
  uint64_t creations = 0;  // PCH files written
  // Compiles that wanted a PCH and did without one: NVRTC refused it (the
  // compile ran again without -pch), ignored it (warning 20282) or had no
  // room in its heap to write one.
  uint64_t fallbacks = 0;
  uint64_t evictions = 0;  // PCH files removed to keep within max_bytes
  // Compiles of a header set this process had not compiled before
  // (note_header_set): the ones that write the set's PCH.
  uint64_t firsts = 0;
};

// Turns automatic PCH on for this process; once, before its first compile.
// The daemon's own process never does: only its workers keep PCHs.
void enable_nvrtc_auto_pch(NvrtcPchSettings settings);
// What enable_nvrtc_auto_pch was given; nullopt while PCH is off.
std::optional<NvrtcPchSettings> nvrtc_auto_pch();
NvrtcPchCounts nvrtc_pch_counts();

// Counts the header set `digest` (header_set_digest, with the source's
// leading directives) as a first when this process has not compiled it
// before. Every compile uses automatic PCH: the first of a set writes the
// PCH, so that the second already uses it.
void note_header_set(const std::string& digest);

// What NVRTC's log says about automatic PCH.
struct PchLog {
  std::vector<std::string> used, created;  // PCH files, as the log names them
  bool ignored = false;  // warning 20282: a PCH of another heap (another process)
  bool refused = false;  // an error about a PCH ("invalid precompiled header file")
};
// Reads the PCH lines out of `log` and removes them: the messages automatic
// PCH writes on every compile ("creating/using precompiled header file") and
// its warnings are kjit's business, not the request's; the compiler's own
// warnings and errors stay.
PchLog take_pch_lines(std::string& log);

// After a compile with PCH: counts it, remembers which PCH files were used
// when, and removes the least recently used ones while the files together
// exceed the bound.
void note_pch_compile(const PchLog& log, bool heap_exhausted);
// After NVRTC refused a PCH in `directory`: its files go, and the compile
// that runs again without PCH is counted as a fallback.
void discard_pch_directory(const std::string& directory);

}  // namespace kjit
