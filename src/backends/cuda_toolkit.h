// The CUDA toolkit kjit compiles with: where it is, which of its libraries
// loaded, and what they support. Loading never fails; what is missing is kept
// as an error that requests needing it get (FAILED_PRECONDITION).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit {

struct NvrtcApi;
struct NvJitLinkApi;

class CudaToolkit {
 public:
  // cuda_home empty: $CUDA_HOME, then the toolkit kjit was built against,
  // then the loader's search path. A given cuda_home is the only place looked.
  static std::shared_ptr<const CudaToolkit> load(std::string cuda_home = {});

  const std::string& home() const { return home_; }

  // The loaded library, or the error explaining why it is not there.
  Result<const NvrtcApi*> nvrtc() const;
  Result<const NvJitLinkApi*> nvjitlink() const;

  // "13.0" from NVRTC (or nvJitLink); "none" when neither loaded.
  std::string version() const;
  // SM numbers NVRTC can compile for; empty when NVRTC did not load.
  std::vector<uint32_t> supported_archs() const;
  // The toolkit's own header directories, given to every CUDA C++ compile.
  const std::vector<std::string>& include_dirs() const { return include_dirs_; }
  // <home>/nvvm/libdevice/libdevice.10.bc, which the LLVM path links for
  // modules calling __nv_* math; empty when the toolkit has none.
  const std::string& libdevice_path() const { return libdevice_path_; }

 private:
  std::string home_;
  std::shared_ptr<const NvrtcApi> nvrtc_;
  std::shared_ptr<const NvJitLinkApi> nvjitlink_;
  Error nvrtc_error_, nvjitlink_error_;
  std::vector<std::string> include_dirs_;
  std::string libdevice_path_;
};

}  // namespace kjit
