// Which CUDA toolkit builds each target. A host may hold several: the system
// toolkit, NVIDIA's NVRTC/nvJitLink wheels in Python environments, the
// project's own prefix, and toolkits the configuration pins to target
// ranges. A pinned range always wins; otherwise the policy picks among the
// toolkits that support the target, so a newer wheel serves what the system
// toolkit cannot (sm_107 with CUDA 13.0) without changing what it can.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "pipeline/toolkit_policy.h"
#include "target/target.h"

namespace kjit {

struct RoutedToolkit {
  std::string origin;  // "system", "wheel", "local" or "configured"
  std::shared_ptr<const CudaToolkit> toolkit;
  TargetRange pinned;  // the configured range it serves; empty otherwise

  // "13.5 (local: /work/kjit/.deps/cuda-wheels/nvidia/cu13)"
  std::string describe() const;
};

class ToolkitRouting {
 public:
  // `system` first, then the others discovered on the host (wheels, the
  // local prefix); `pinned` are the configuration's ranges, first match wins.
  ToolkitRouting(std::shared_ptr<const CudaToolkit> system, std::vector<RoutedToolkit> discovered,
                 std::vector<RoutedToolkit> pinned, ToolkitPolicy policy);

  // The toolkit that builds `target`. When none supports it, the system
  // toolkit, whose error then names what it does support.
  const RoutedToolkit& for_target(const Target& target) const;
  // Why: "pinned by [[toolkits]] cuda:100..cuda:121", "system toolkit
  // supports sm_90", "newest toolkit supporting sm_107", "no toolkit supports sm_107".
  std::string reason(const Target& target) const;

  // The newest toolkit whose nvFatbin loads, for combining a request's parts;
  // null when none does.
  const RoutedToolkit* fatbin_toolkit() const;

  const RoutedToolkit& system() const { return all_.front(); }
  // Every toolkit: the system's, the discovered, then the pinned.
  const std::vector<RoutedToolkit>& all() const { return all_; }
  ToolkitPolicy policy() const { return policy_; }

 private:
  // The one decision for_target and reason both report.
  enum class Why { pinned, system, newest, unsupported };
  struct Route {
    const RoutedToolkit* toolkit;
    Why why;
  };
  Route route(const Target& target) const;
  const RoutedToolkit* newest_supporting(const Target& target) const;

  std::vector<RoutedToolkit> all_;
  size_t pinned_begin_ = 0;
  ToolkitPolicy policy_;
};

// "13.5" > "13.0" > "12.8"; "none" is older than every version.
bool toolkit_newer(const CudaToolkit& a, const CudaToolkit& b);

}  // namespace kjit
