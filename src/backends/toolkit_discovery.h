// Every CUDA toolkit kjitd may compile with: the system one (an installed
// toolkit, $CUDA_HOME) and NVIDIA's Python wheels (nvidia/cuNN with lib/ and
// include/), which are often newer and so build for architectures the system
// toolkit does not know. Finding them never fails: a path that holds none is
// skipped with a debug line.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda_toolkit.h"

namespace kjit {

// The prefix scripts/install-deps.sh installs the wheels into
// (KJIT_LOCAL_TOOLKIT_PREFIX at build time); "" when the build named none.
std::string default_local_toolkit_prefix();

struct ToolkitSearch {
  std::string system_home;               // "" = $CUDA_HOME, then KJIT_DEFAULT_CUDA_HOME (as CudaToolkit::load does)
  std::vector<std::string> wheel_paths;  // each: a Python env prefix (…/lib/python3.*/site-packages/nvidia/cu*), a site-packages dir, or an nvidia/cuNN dir itself
  std::string local_prefix = default_local_toolkit_prefix();  // KJIT_LOCAL_TOOLKIT_PREFIX; "" = none
};

struct DiscoveredToolkit {
  std::string origin;  // "system", "wheel" (from wheel_paths) or "local" (the project prefix)
  std::string home;    // the directory that holds lib/ or lib64/
  std::shared_ptr<const CudaToolkit> toolkit;
};

// The system toolkit first (always present in the list, even when nothing
// loaded, so errors can name it), then every wheel toolkit found: those of
// wheel_paths in their order, then the local prefix's. A home already listed
// (same canonical path) is not listed again. Wheel toolkits get the system
// toolkit as header_fallback. A path that does not exist or holds no NVIDIA
// wheel is skipped with a spdlog debug line, never an error.
std::vector<DiscoveredToolkit> discover_cuda_toolkits(const ToolkitSearch& search);

// A toolkit found beyond the system one, as a daemon hands its discovery to
// its compile workers.
struct ToolkitHome {
  std::string origin;  // "wheel" or "local"
  std::string home;
  // What the discovering process learnt loading it; when given, its
  // libraries are loaded at their first use (CudaToolkit::load_on_first_use).
  std::optional<ToolkitFacts> facts;
};
// The toolkits another process discovered, loaded without searching: the
// system one as discover_cuda_toolkits loads it (system_home as
// ToolkitSearch::system_home), then `homes` in their order. The system
// toolkit builds most targets and is loaded now; the others, when their
// facts are given, at their first use.
std::vector<DiscoveredToolkit> load_cuda_toolkits(const std::string& system_home, const std::vector<ToolkitHome>& homes);

// The toolkit homes (nvidia/cuNN directories holding libnvrtc, libnvJitLink
// or libnvfatbin under lib/) that `path` holds, newest CUDA major first. `path`
// may be such a directory itself, an nvidia/ directory, a site-packages
// directory (or a pip --target prefix), or a Python environment's prefix.
// Empty when it holds none or does not exist.
std::vector<std::string> wheel_toolkit_homes(const std::string& path);

// The nvidia/cuNN directories of a Python environment: <prefix>/lib/python3*/
// {site,dist}-packages/nvidia/cu<digits>, whether or not they hold libraries;
// sorted by path.
std::vector<std::string> python_env_cuda_dirs(const std::string& prefix);

}  // namespace kjit
