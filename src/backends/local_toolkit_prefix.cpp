#include "backends/toolkit_discovery.h"

namespace kjit {

// Set by the build (KJIT_LOCAL_TOOLKIT_PREFIX) to where install-deps puts
// the CUDA wheels; Triton builds sit beside them.
std::string default_local_toolkit_prefix() { return KJIT_LOCAL_TOOLKIT_PREFIX; }

}  // namespace kjit
