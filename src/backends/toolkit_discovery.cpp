#include "backends/toolkit_discovery.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>

namespace kjit {
namespace {

namespace fs = std::filesystem;

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// The subdirectories of `dir` whose names `keep` accepts, sorted by name;
// none when it cannot be read.
template <typename Keep>
std::vector<fs::path> subdirectories(const fs::path& dir, Keep keep) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (keep(it->path().filename().string()) && it->is_directory(type_ec)) found.push_back(it->path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// "cu13" -> 13; 0 for anything else ("cuda_nvrtc", CUDA 12's per-package
// wheel directories, is not one toolkit home).
unsigned cuda_major_of(std::string_view name) {
  if (!name.starts_with("cu") || name.size() == 2) return 0;
  unsigned major = 0;
  auto [end, ec] = std::from_chars(name.data() + 2, name.data() + name.size(), major);
  return ec == std::errc{} && end == name.data() + name.size() ? major : 0;
}

// A wheel toolkit home: lib/ holds one of the libraries kjit loads.
bool holds_toolkit_library(const fs::path& home) {
  std::error_code ec;
  for (fs::directory_iterator it(home / "lib", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (std::string_view stem : {"libnvrtc.so", "libnvJitLink.so", "libnvfatbin.so"})
      if (name.starts_with(stem)) return true;
  }
  return false;
}

// The cu<N> homes under an nvidia/ directory, newest first.
std::vector<fs::path> homes_under_nvidia(const fs::path& nvidia) {
  std::vector<fs::path> homes =
      subdirectories(nvidia, [](const std::string& name) { return cuda_major_of(name) != 0; });
  std::erase_if(homes, [](const fs::path& home) { return !holds_toolkit_library(home); });
  std::stable_sort(homes.begin(), homes.end(), [](const fs::path& a, const fs::path& b) {
    return cuda_major_of(a.filename().string()) > cuda_major_of(b.filename().string());
  });
  return homes;
}

std::string canonical_or_self(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  return ec ? fs::path(path).lexically_normal().string() : canonical.string();
}

}  // namespace

std::vector<std::string> python_env_cuda_dirs(const std::string& prefix) {
  std::vector<std::string> dirs;
  const auto is_python3 = [](const std::string& name) { return name.starts_with("python3"); };
  // dist-packages: where Debian's Python and pip run as root under
  // /usr/local put packages.
  for (const fs::path& python : subdirectories(fs::path(prefix) / "lib", is_python3))
    for (const char* packages : {"site-packages", "dist-packages"})
      for (const fs::path& cu : subdirectories(python / packages / "nvidia",
                                               [](const std::string& name) { return cuda_major_of(name) != 0; }))
        dirs.push_back(cu.string());
  return dirs;
}

std::vector<std::string> wheel_toolkit_homes(const std::string& path) {
  const fs::path root(path);
  std::vector<fs::path> homes;
  if (holds_toolkit_library(root)) {
    homes.push_back(root);  // an nvidia/cuNN directory itself
  } else if (cuda_major_of(root.filename().string()) == 0) {
    if (root.filename() == "nvidia") homes = homes_under_nvidia(root);
    if (homes.empty()) homes = homes_under_nvidia(root / "nvidia");  // site-packages, or pip --target's prefix
    if (homes.empty()) {
      // A Python environment: lib/python3.X/site-packages/nvidia/cuNN.
      std::vector<fs::path> env_homes;
      for (const std::string& cu : python_env_cuda_dirs(path))
        if (holds_toolkit_library(cu)) env_homes.push_back(cu);
      std::stable_sort(env_homes.begin(), env_homes.end(), [](const fs::path& a, const fs::path& b) {
        return cuda_major_of(a.filename().string()) > cuda_major_of(b.filename().string());
      });
      homes = std::move(env_homes);
    }
  }
  std::vector<std::string> result;
  for (const fs::path& home : homes) result.push_back(home.string());
  return result;
}

std::vector<DiscoveredToolkit> discover_cuda_toolkits(const ToolkitSearch& search) {
  std::vector<DiscoveredToolkit> found;
  std::vector<std::string> seen;  // canonical homes

  std::shared_ptr<const CudaToolkit> system = CudaToolkit::load(search.system_home);
  found.push_back({"system", system->home(), system});
  seen.push_back(canonical_or_self(system->home()));

  const auto scan = [&](const std::string& path, const char* origin) {
    if (!is_dir(path)) {
      spdlog::debug("toolkit discovery: skipping {} path {}: not a directory", origin, path);
      return;
    }
    const std::vector<std::string> homes = wheel_toolkit_homes(path);
    if (homes.empty()) {
      spdlog::debug("toolkit discovery: skipping {} path {}: no NVIDIA CUDA wheel (nvidia/cuNN/lib with NVRTC, "
                    "nvJitLink or nvFatbin) there",
                    origin, path);
      return;
    }
    for (const std::string& home : homes) {
      std::string canonical = canonical_or_self(home);
      if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) {
        spdlog::debug("toolkit discovery: {} is already listed", home);
        continue;
      }
      seen.push_back(std::move(canonical));
      std::shared_ptr<const CudaToolkit> toolkit = CudaToolkit::load(home, system);
      spdlog::debug("toolkit discovery: {} toolkit {} at {}", origin, toolkit->version(), home);
      found.push_back({origin, home, std::move(toolkit)});
    }
  };
  for (const std::string& path : search.wheel_paths) scan(path, "wheel");
  if (!search.local_prefix.empty()) scan(search.local_prefix, "local");
  return found;
}

std::vector<DiscoveredToolkit> load_cuda_toolkits(const std::string& system_home, const std::vector<ToolkitHome>& homes) {
  std::vector<DiscoveredToolkit> found;
  std::shared_ptr<const CudaToolkit> system = CudaToolkit::load(system_home);
  found.push_back({"system", system->home(), system});
  for (const ToolkitHome& toolkit : homes)
    found.push_back({toolkit.origin, toolkit.home,
                     toolkit.facts ? CudaToolkit::load_on_first_use(toolkit.home, system, *toolkit.facts)
                                   : CudaToolkit::load(toolkit.home, system)});
  return found;
}

}  // namespace kjit
