// The allowlist of compile options a client may send, and where each goes:
// NVRTC (CUDA C++ -> PTX), nvJitLink (PTX -> cubin), or both; -ftz also to
// the LLVM stages, for LLVM IR. Options that
// would make the daemon read or write its own files are refused by name.
#pragma once

#include <string>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

struct CheckedOptions {
  std::vector<std::string> normalized;  // canonical spellings, request order
  std::vector<std::string> nvrtc;       // for the CUDA C++ -> PTX stage
  std::vector<std::string> nvjitlink;   // for the PTX -> cubin stage
  std::vector<std::string> llvm;        // for the LLVM stages (LLVM IR input): -ftz=<v>
  std::vector<std::string> tileiras;    // for tileiras (Tile IR input): --opt-level=<n>, --lineinfo, --device-debug
};

// invalid_argument naming the first option that is refused, and why.
Result<CheckedOptions> check_options(InputKind input, const std::vector<std::string>& options);

}  // namespace kjit
