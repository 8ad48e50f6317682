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
// that does not assemble is classified by classify_link_failure.
Result<CubinOutput> link_ptx_to_cubin(const NvJitLinkApi& api, std::string_view ptx, std::string_view ptx_name,
                                      const std::vector<std::string>& options);

// Whose fault a failed link is. nvJitLink answers INTERNAL for an undefined
// reference and for a kernel over a limit of the target, so its log decides:
//   undefined references        invalid_argument naming them (and that --ptx
//                               returns the PTX to link elsewhere)
//   a limit of the target       invalid_argument (shared, local or parameter
//                               space, registers)
//   a PTX version or target the toolkit's assembler does not know
//                               failed_precondition: the toolkit is the limit
//   any other assembler error   invalid_argument
//   none of these               invalid_argument when nvJitLink's code says
//                               the input caused it, else internal
// The message carries the assembler's first error line; the log, all of it.
Error classify_link_failure(bool code_is_input_error, std::string_view ptx_name, std::string_view what_failed,
                            std::string log);

// The symbols of nvJitLink's "Undefined reference to 'X'" lines (and
// ptxas's "Unresolved extern function 'X'"), in order, each once.
std::vector<std::string> undefined_references(std::string_view log);

}  // namespace kjit
