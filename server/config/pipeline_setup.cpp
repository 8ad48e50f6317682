#include "server/config/pipeline_setup.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "backends/tileiras/tileiras.h"
#include "backends/toolkit_discovery.h"
#include "cache/disk_store.h"

namespace kjit {
namespace {

void log_toolkit(const RoutedToolkit& t) {
  const CudaToolkit& toolkit = *t.toolkit;
  spdlog::info("CUDA toolkit {} ({}) at {}", toolkit.version(), t.origin, toolkit.home());
  for (const std::string& note : toolkit.notes()) spdlog::info("  {}", note);
}

}  // namespace

TileirasSearch tileiras_search_of(const DaemonConfig& config) {
  TileirasSearch search{config.tileiras, config.toolkit_paths, default_local_tileiras_prefix()};
  // The project's tileiras sits beside its CUDA wheels: a configured wheel
  // prefix moves it too, and "" (none) means neither.
  if (config.local_toolkit_prefix)
    search.local_prefix = config.local_toolkit_prefix->empty()
                              ? std::string()
                              : (std::filesystem::path(*config.local_toolkit_prefix).parent_path() / "tileiras").string();
  return search;
}

TritonBuildSearch triton_build_search_of(const DaemonConfig& config) {
  TritonBuildSearch search{config.triton_builds, default_local_triton_prefix()};
  // Beside the CUDA wheels, as tileiras.
  if (config.local_toolkit_prefix)
    search.local_prefix =
        config.local_toolkit_prefix->empty()
            ? std::string()
            : (std::filesystem::path(*config.local_toolkit_prefix).parent_path() / "triton-builds").string();
  return search;
}

std::string triton_descriptions_dir_of(const DaemonConfig& config) {
  if (!config.triton_descriptions_dir.empty()) return config.triton_descriptions_dir;
  if (!config.cache.enabled || !config.cache.disk) return {};
  const std::string cache = config.cache.directory.empty() ? default_disk_cache_directory() : config.cache.directory;
  return (std::filesystem::path(cache) / "triton-builds").string();
}

Result<std::shared_ptr<const CompilePipeline>> make_compile_pipeline(const DaemonConfig& config,
                                                                      const std::vector<ToolkitHome>* discovered) {
  ToolkitSearch search;
  search.system_home = config.cuda_home;
  search.wheel_paths = config.toolkit_paths;
  if (config.local_toolkit_prefix) search.local_prefix = *config.local_toolkit_prefix;
  std::vector<DiscoveredToolkit> found =
      discovered ? load_cuda_toolkits(search.system_home, *discovered) : discover_cuda_toolkits(search);
  // tileiras is a program, found on first use (a Tile IR request's key, or
  // a worker's confinement, which must allow running it).
  set_tileiras_search(tileiras_search_of(config));
  std::shared_ptr<const CudaToolkit> system = found.front().toolkit;
  if (auto nvrtc = system->nvrtc(); !nvrtc) spdlog::warn("{}", nvrtc.error().message);
  if (auto nvjitlink = system->nvjitlink(); !nvjitlink) spdlog::warn("{}", nvjitlink.error().message);

  PipelineSetup setup{config.pipelines, config.plugins, config.llvm_pass_plugins, {}, {}, config.toolkit_policy};
  setup.triton_plugins = config.triton_plugins;
  log_toolkit({"system", system, {}});
  for (size_t i = 1; i < found.size(); ++i) {
    setup.discovered_toolkits.push_back({found[i].origin, found[i].toolkit, {}});
    log_toolkit(setup.discovered_toolkits.back());
  }
  for (const ToolkitRange& range : config.toolkits) {
    auto pinned = CudaToolkit::load(range.cuda_home, system);
    if (auto nvjitlink = pinned->nvjitlink(); !nvjitlink)
      return make_error(ErrorCode::failed_precondition,
                        "toolkit for " + range.targets.describe() + ": " + nvjitlink.error().message);
    spdlog::info("CUDA toolkit {} at {} builds {}", pinned->version(), pinned->home(), range.targets.describe());
    setup.pinned_toolkits.push_back({"configured", std::move(pinned), range.targets});
  }
  return CompilePipeline::create(std::move(system), std::move(setup));
}

std::vector<ToolkitHome> discovered_homes(const CompilePipeline& pipeline) {
  std::vector<ToolkitHome> out;
  for (const RoutedToolkit& t : pipeline.toolkits().all())
    if (t.origin == "wheel" || t.origin == "local") out.push_back({t.origin, t.toolkit->home(), t.toolkit->facts()});
  return out;
}

}  // namespace kjit
