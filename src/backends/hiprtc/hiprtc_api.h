// HIPRTC's entry points, bound at run time from ROCm's libamdhip64 (never
// linked, and no HIP headers needed), and where that library is found.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit {

// hiprtc.h's types, declared here so kjit builds without ROCm: a program is
// an opaque handle, a result a C enum (int-sized) whose 0 is success.
using HiprtcProgram = struct HiprtcProgramHandle*;
using HiprtcResult = int;
constexpr HiprtcResult k_hiprtc_success = 0;
constexpr HiprtcResult k_hiprtc_error_out_of_memory = 1;
constexpr HiprtcResult k_hiprtc_error_invalid_option = 5;
constexpr HiprtcResult k_hiprtc_error_compilation = 6;
constexpr HiprtcResult k_hiprtc_error_name_expression_not_valid = 10;

struct HiprtcLocation {
  std::string path;     // symlinks resolved: .../libamdhip64.so.5.2.21153
  std::string version;  // "5.2.21153" from the file name; empty when it has none
};

// Finds HIPRTC without loading it, so it is safe in the daemon's own process:
// $KJIT_HIPRTC_LIBRARY when set (returned even when nothing is there, so that
// loading it fails naming it), else libamdhip64.so.5, libamdhip64.so or
// libhiprtc.so in /usr/lib/x86_64-linux-gnu, /opt/rocm/lib, /usr/lib64,
// /usr/local/lib. nullopt when absent.
std::optional<HiprtcLocation> find_hiprtc();

// The same search over `library_dirs` only, with no environment override.
std::optional<HiprtcLocation> find_hiprtc(const std::vector<std::string>& library_dirs);

struct HiprtcApi {
  // Where it was loaded from; version falls back to hiprtcVersion's
  // "major.minor" when the file name carries none.
  HiprtcLocation location;
  int major = 0, minor = 0;  // hiprtcVersion (ROCm 5.2.3's reports 9.0)

  const char* (*get_error_string)(HiprtcResult result) = nullptr;
  HiprtcResult (*version)(int* major, int* minor) = nullptr;
  HiprtcResult (*create_program)(HiprtcProgram* program, const char* source, const char* name, int header_count,
                                 const char** headers, const char** include_names) = nullptr;
  HiprtcResult (*destroy_program)(HiprtcProgram* program) = nullptr;
  HiprtcResult (*compile_program)(HiprtcProgram program, int option_count, const char** options) = nullptr;
  HiprtcResult (*get_code_size)(HiprtcProgram program, size_t* size) = nullptr;
  HiprtcResult (*get_code)(HiprtcProgram program, char* code) = nullptr;
  HiprtcResult (*get_program_log_size)(HiprtcProgram program, size_t* size) = nullptr;
  HiprtcResult (*get_program_log)(HiprtcProgram program, char* log) = nullptr;
  HiprtcResult (*add_name_expression)(HiprtcProgram program, const char* expression) = nullptr;
  HiprtcResult (*get_lowered_name)(HiprtcProgram program, const char* expression, const char** lowered) = nullptr;
};

// dlopen's the library at `location`. Compile workers only: loading HIPRTC
// brings in comgr and its own LLVM, and HIPRTC may abort the process on
// some targets. failed_precondition naming the path and dlerror when it
// cannot be loaded or lacks an entry point.
Result<std::shared_ptr<const HiprtcApi>> load_hiprtc(const HiprtcLocation& location);

}  // namespace kjit
