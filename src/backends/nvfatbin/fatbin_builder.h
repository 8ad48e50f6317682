// One fatbin from cubins and PTX: what the driver loads (cuModuleLoadData)
// to pick, on the device at hand, the cubin built for it or else the PTX to
// JIT-compile.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/nvfatbin/nvfatbin_api.h"
#include "kjit/status.h"

namespace kjit {

struct FatbinPart {
  enum class Kind { cubin, ptx } kind;
  std::string arch;  // what nvFatbin calls the arch: "90", "90a", "107" (no sm_ or compute_)
  std::string identifier;  // the part's name in the fatbin (cuobjdump shows it) and in errors
  std::string_view data;   // the cubin's bytes or the PTX text; read during the call only
};

// The fatbin holding `parts`, in their order. An error carries nvFatbin's
// message and the failing part's identifier and arch; a part nvFatbin
// rejects is invalid_argument, any other failure internal.
Result<std::string> build_fatbin(const NvFatbinApi& api, const std::vector<FatbinPart>& parts);

}  // namespace kjit
