#include "pipeline/toolkit_routing.h"

#include <charconv>
#include <utility>

#include "backends/nvfatbin/nvfatbin_api.h"

namespace kjit {
namespace {

// {major, minor} from "13.5"; {-1, -1} for "none" or anything unparsable.
std::pair<int, int> version_of(const CudaToolkit& toolkit) {
  const std::string text = toolkit.version();
  int major = -1, minor = -1;
  const char* end = text.data() + text.size();
  auto [dot, ec] = std::from_chars(text.data(), end, major);
  if (ec != std::errc{} || dot == end || *dot != '.') return {-1, -1};
  if (std::from_chars(dot + 1, end, minor).ec != std::errc{}) return {-1, -1};
  return {major, minor};
}

}  // namespace

bool toolkit_newer(const CudaToolkit& a, const CudaToolkit& b) { return version_of(a) > version_of(b); }

std::string RoutedToolkit::describe() const {
  return toolkit->version() + " (" + origin + ": " + toolkit->home() + ")";
}

ToolkitRouting::ToolkitRouting(std::shared_ptr<const CudaToolkit> system, std::vector<RoutedToolkit> discovered,
                               std::vector<RoutedToolkit> pinned, ToolkitPolicy policy)
    : policy_(policy) {
  all_.push_back({"system", std::move(system), {}});
  for (RoutedToolkit& t : discovered) all_.push_back(std::move(t));
  pinned_begin_ = all_.size();
  for (RoutedToolkit& t : pinned) all_.push_back(std::move(t));
}

const RoutedToolkit* ToolkitRouting::newest_supporting(const Target& target) const {
  const RoutedToolkit* best = nullptr;
  // Pinned toolkits serve only their ranges, so they are not candidates.
  for (size_t i = 0; i < pinned_begin_; ++i) {
    const RoutedToolkit& t = all_[i];
    if (!t.toolkit->supports(target)) continue;
    // Ties keep the earlier one: the system toolkit before a wheel of the
    // same version.
    if (!best || toolkit_newer(*t.toolkit, *best->toolkit)) best = &t;
  }
  return best;
}

ToolkitRouting::Route ToolkitRouting::route(const Target& target) const {
  for (size_t i = pinned_begin_; i < all_.size(); ++i)
    if (all_[i].pinned.contains(target)) return {&all_[i], Why::pinned};
  if (policy_ == ToolkitPolicy::system_first && system().toolkit->supports(target)) return {&system(), Why::system};
  if (const RoutedToolkit* newest = newest_supporting(target)) return {newest, Why::newest};
  return {&system(), Why::unsupported};
}

const RoutedToolkit& ToolkitRouting::for_target(const Target& target) const { return *route(target).toolkit; }

std::string ToolkitRouting::reason(const Target& target) const {
  const Route chosen = route(target);
  switch (chosen.why) {
    case Why::pinned: return "pinned by [[toolkits]] " + chosen.toolkit->pinned.describe();
    case Why::system: return "the system toolkit supports " + target.sm_name();
    case Why::newest: return "the newest toolkit that supports " + target.sm_name();
    case Why::unsupported: break;
  }
  return "no toolkit supports " + target.sm_name();
}

const RoutedToolkit* ToolkitRouting::fatbin_toolkit() const {
  const RoutedToolkit* best = nullptr;
  for (const RoutedToolkit& t : all_) {
    if (!t.toolkit->nvfatbin()) continue;
    if (!best || toolkit_newer(*t.toolkit, *best->toolkit)) best = &t;
  }
  return best;
}

}  // namespace kjit
