// Pass "ptx-retarget": rewrites a PTX module's .version and .target lines,
// Triton's method for targets newer than the code generator (LLVM 19 stops
// at sm_90a; cuda:107 gets sm_90-class code retargeted to sm_107).
#pragma once

#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

struct PtxHeader {
  std::string version;  // "8.5"
  std::string target;   // "sm_90a" (first entry of the .target list)
};

// The .version and .target of a PTX module; invalid_argument when missing.
Result<PtxHeader> read_ptx_header(std::string_view ptx);

// Sets .version to max(current, min_version) and .target to `target`,
// keeping any further .target entries (texmode, debug).
Result<std::string> retarget_ptx(std::string_view ptx, std::string_view target, std::string_view min_version);

}  // namespace kjit
