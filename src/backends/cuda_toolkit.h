// The CUDA toolkit kjit compiles with: where it is, which of its libraries
// loaded, and what they support. Loading never fails; what is missing is kept
// as an error that requests needing it get (FAILED_PRECONDITION).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit {

struct NvrtcApi;
struct NvJitLinkApi;
struct NvFatbinApi;
struct Target;

// What loading a toolkit's libraries told about it: all that routing a
// target and naming the toolkit need. A daemon hands these to its compile
// workers, which then load a toolkit's libraries only when a job needs them.
struct ToolkitFacts {
  std::string version;                                      // as CudaToolkit::version()
  std::vector<uint32_t> archs;                              // as CudaToolkit::supported_archs()
  bool nvrtc = false, nvjitlink = false, nvfatbin = false;  // which libraries loaded
  bool operator==(const ToolkitFacts&) const = default;
};

class CudaToolkit {
 public:
  // cuda_home empty: $CUDA_HOME, then the toolkit kjit was built against,
  // then the loader's search path. A given cuda_home is the only place looked
  // for libraries. What cuda_home lacks of the headers CUDA C++ includes (the
  // runtime's and crt/, CCCL's cuda/std) and of libdevice is taken from
  // header_fallback when one is given: NVIDIA's NVRTC wheel alone carries
  // nvrtc.h and nothing a kernel includes. notes() says what was borrowed.
  static std::shared_ptr<const CudaToolkit> load(std::string cuda_home = {},
                                                 std::shared_ptr<const CudaToolkit> header_fallback = nullptr);
  // The same toolkit, described by what another process learnt loading it:
  // its headers and libdevice are found now, its libraries are loaded at the
  // first nvrtc(), nvjitlink() or nvfatbin() call. Loading one takes tens of
  // milliseconds, which a worker need not spend before its first job on a
  // toolkit that builds only the rarer targets. Should the libraries found
  // then differ from `facts` (replaced since), those calls fail, naming both.
  static std::shared_ptr<const CudaToolkit> load_on_first_use(std::string cuda_home,
                                                              std::shared_ptr<const CudaToolkit> header_fallback,
                                                              ToolkitFacts facts);
  ToolkitFacts facts() const;

  const std::string& home() const { return home_; }

  // The loaded library, or the error explaining why it is not there.
  Result<const NvrtcApi*> nvrtc() const;
  Result<const NvJitLinkApi*> nvjitlink() const;
  // libnvfatbin, looked for as NVRTC is. Toolkits before 12.4 have none, and
  // a wheel environment has one only with nvidia-nvfatbin installed.
  Result<const NvFatbinApi*> nvfatbin() const;

  // "13.0" from NVRTC (or nvJitLink); "none" when neither loaded.
  std::string version() const;
  // SM numbers NVRTC can compile for; empty when NVRTC did not load.
  std::vector<uint32_t> supported_archs() const;
  // Whether this toolkit can build for `target`: NVRTC lists target.sm among
  // its architectures; without NVRTC, nvJitLink is at least the CUDA version
  // that introduced the architecture (the target table's min_cuda). Family
  // targets (sm_XXXf) also need CUDA 12.9, which introduced them.
  bool supports(const Target& target) const;
  // The header directories given to every CUDA C++ compile: the toolkit's
  // own, or those borrowed from the fallback (notes() says so).
  const std::vector<std::string>& include_dirs() const { return include_dirs_; }
  // <home>/nvvm/libdevice/libdevice.10.bc (or the fallback's), which the
  // LLVM path links for modules calling __nv_* math; empty when there is none.
  const std::string& libdevice_path() const { return libdevice_path_; }
  // What load() decided that a reader of the logs should know: headers or
  // libdevice taken from the fallback toolkit, or missing altogether.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  // The toolkit's headers and libdevice, found at once either way.
  void find_headers(const CudaToolkit* fallback);
  // The libraries, loaded once: at load(), or at the first call needing one.
  void load_libraries() const;
  void ensure_libraries() const;
  // What the loaded libraries say about themselves.
  ToolkitFacts loaded_facts() const;

  std::string home_;
  bool search_loader_path_ = false;
  // What version(), supported_archs() and supports() answer: the loaded
  // libraries' facts, or those handed to load_on_first_use.
  ToolkitFacts facts_;
  mutable std::once_flag libraries_once_;
  // Written once, under libraries_once_, before any reader sees them.
  mutable std::shared_ptr<const NvrtcApi> nvrtc_;
  mutable std::shared_ptr<const NvJitLinkApi> nvjitlink_;
  mutable std::shared_ptr<const NvFatbinApi> nvfatbin_;
  mutable Error nvrtc_error_, nvjitlink_error_, nvfatbin_error_;
  std::vector<std::string> include_dirs_;
  // Which of include_dirs_ hold the CUDA headers and CCCL ("" = none), so a
  // toolkit using this one as its fallback borrows only what it lacks.
  std::string cuda_include_dir_, cccl_include_dir_;
  std::string libdevice_path_;
  std::vector<std::string> notes_;
};

}  // namespace kjit
