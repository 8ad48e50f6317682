// Stage "nvjitlink": PTX -> cubin with nvJitLink, in-process (no ptxas
// subprocess).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/nvjitlink/nvjitlink_api.h"
#include "kjit/status.h"

namespace kjit {

struct CubinOutput {
  std::string cubin;
  std::string log;  // nvJitLink's info log (ptxas -v output when asked for)
};

// `options` is the full nvJitLink option list, "-arch=sm_XX" included. PTX
// that does not assemble is invalid_argument with the error log.
Result<CubinOutput> link_ptx_to_cubin(const NvJitLinkApi& api, std::string_view ptx, std::string_view ptx_name,
                                      const std::vector<std::string>& options);

}  // namespace kjit
