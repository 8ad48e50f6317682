#include "server/edge/toolkit_listing.h"

#include "backends/nvfatbin/nvfatbin_api.h"
#include "backends/nvjitlink/nvjitlink_api.h"
#include "backends/nvrtc/nvrtc_api.h"
#include "backends/triton/triton_build.h"
#include "backends/triton/triton_discovery.h"

namespace kjit {
namespace {

template <typename Api>
std::string library_or_error(const Result<const Api*>& api) {
  return api ? (*api)->library_path : "not loaded: " + api.error().message;
}

void describe_triton_builds(v1::ListToolkitsResponse& response) {
  const TritonBuild* chosen = default_triton_build();
  std::vector<const TritonBuild*> ordered;
  if (chosen) ordered.push_back(chosen);
  for (const TritonBuild& build : triton_builds())
    if (&build != chosen) ordered.push_back(&build);
  for (const TritonBuild* build : ordered) {
    v1::TritonBuild& out = *response.add_triton();
    out.set_name(build->name);
    out.set_version(build->version);
    out.set_distribution(build->distribution);
    out.set_python(build->python);
    for (const std::string& backend : build->backends) out.add_backends(backend);
    for (uint32_t sm : build->cuda_archs) out.add_cuda_archs(sm);
    for (const std::string& gfx : build->hip_archs) out.add_hip_archs(gfx);
    for (const std::string& plugin : build->plugins) out.add_plugins(plugin);
    for (const TritonPtxas& ptxas : build->ptxas) out.add_ptxas(ptxas.path + " (" + ptxas.version + ")");
    out.set_libtriton_sha256(build->libtriton_sha256);
    out.set_tlx(build->tlx);
    out.set_tlx_provider(build->tlx_provider);
    for (const TritonPluginPackage& plugin : build->installed_plugins) {
      v1::TritonPlugin& listed = *out.add_installed_plugins();
      listed.set_distribution(plugin.distribution);
      listed.set_version(plugin.version);
      listed.set_stages_hook_sha256(plugin.stages_hook_sha256);
      for (const TritonPtxas& library : plugin.libraries) {
        v1::TritonPluginLibrary& lib = *listed.add_libraries();
        lib.set_path(library.path);
        lib.set_sha256(library.sha256);
      }
      for (const TritonConfiguredPlugin& configured : build->configured_plugins)
        if (configured.package == plugin.distribution)
          listed.mutable_environment()->insert(configured.environment.begin(), configured.environment.end());
    }
    out.set_plugin_loader(build->plugin_loader);
    if (!build->borrowed_cuda_archs.empty()) {
      v1::TritonBorrowedPtxas& lent = *out.mutable_borrowed_ptxas();
      lent.set_path(build->borrowed_ptxas.path);
      lent.set_version(build->borrowed_ptxas.version);
      lent.set_sha256(build->borrowed_ptxas.sha256);
      lent.set_from_build(build->borrowed_from);
      for (uint32_t sm : build->borrowed_cuda_archs) lent.add_cuda_archs(sm);
    }
    for (const TritonConfiguredPlugin& configured : build->configured_plugins) {
      if (configured.library.empty()) continue;
      v1::TritonPlugin& listed = *out.add_configured_plugins();
      v1::TritonPluginLibrary& lib = *listed.add_libraries();
      lib.set_path(configured.library);
      lib.set_sha256(configured.sha256);
      listed.mutable_environment()->insert(configured.environment.begin(), configured.environment.end());
    }
    out.set_is_default(build == chosen);
    for (const auto& [backend, fields] : build->options)
      for (const auto& [name, type] : fields) out.add_options(backend + "." + name + ": " + type);
  }
  for (const std::string& failure : triton_discovery_failures()) {
    v1::TritonBuild& out = *response.add_triton();
    out.set_error(failure);
  }
}

}  // namespace

void describe_toolkits(const ToolkitRouting& routing, v1::ListToolkitsResponse& response) {
  const std::vector<RoutedToolkit>& all = routing.all();
  for (const RoutedToolkit& routed : all) {
    const CudaToolkit& toolkit = *routed.toolkit;
    v1::ToolkitInfo& info = *response.add_toolkits();
    info.set_origin(routed.origin);
    info.set_home(toolkit.home());
    info.set_version(toolkit.version());
    info.set_nvrtc(library_or_error(toolkit.nvrtc()));
    info.set_nvjitlink(library_or_error(toolkit.nvjitlink()));
    info.set_nvfatbin(library_or_error(toolkit.nvfatbin()));
    for (uint32_t sm : toolkit.supported_archs()) info.add_archs(sm);
    for (const std::string& dir : toolkit.include_dirs()) info.add_include_dirs(dir);
    for (const std::string& note : toolkit.notes()) info.add_notes(note);
    if (routed.pinned.max_sm) info.set_pinned(routed.pinned.describe());
    info.set_libdevice(toolkit.libdevice_path());
  }
  auto index_of = [&](const RoutedToolkit* routed) {
    for (size_t i = 0; i < all.size(); ++i)
      if (&all[i] == routed) return static_cast<int32_t>(i);
    return int32_t{-1};
  };
  for (const ArchInfo& arch : known_archs()) {
    Target target;
    target.sm = arch.sm;
    const RoutedToolkit& routed = routing.for_target(target);
    v1::TargetRoute& route = *response.add_routes();
    route.set_target(target.canonical());
    route.set_toolkit(index_of(&routed));
    route.set_supported(routed.toolkit->supports(target));
    route.set_reason(routing.reason(target));
  }
  response.set_policy(std::string(to_string(routing.policy())));
  response.set_fatbin_toolkit(index_of(routing.fatbin_toolkit()));
  describe_triton_builds(response);
}

}  // namespace kjit
