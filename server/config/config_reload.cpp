#include "server/config/config_reload.h"

#include "server/config/config_keys.h"

namespace kjit {
namespace {

bool same_edits(const std::vector<PipelineEdit>& a, const std::vector<PipelineEdit>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const PipelineEdit &x = a[i], &y = b[i];
    if (x.op != y.op || x.scope != y.scope || x.anchor != y.anchor || x.pass != y.pass || !(x.stage == y.stage) ||
        !(x.pipeline == y.pipeline) || x.origin != y.origin)
      return false;
  }
  return true;
}

bool same_toolkits(const std::vector<ToolkitRange>& a, const std::vector<ToolkitRange>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i].targets == b[i].targets) || a[i].cuda_home != b[i].cuda_home) return false;
  return true;
}

bool same_blob_sharing(const std::vector<BlobSharing>& a, const std::vector<BlobSharing>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].group != b[i].group || a[i].uids != b[i].uids || a[i].ns != b[i].ns) return false;
  return true;
}

}  // namespace

ConfigChanges config_changes(const DaemonConfig& in_force, const DaemonConfig& read) {
  ConfigChanges changes;
  for (const ConfigKey& key : config_keys()) {
    if (key.get(in_force) == key.get(read)) continue;
    (key.reloadable ? changes.reloadable : changes.needs_restart).emplace_back(key.path);
  }
  // Read by daemon_config.cpp, not by rows: each builds the pipeline, the
  // workers or the socket's users at start.
  auto structured = [&](bool same, const char* name) {
    if (!same) changes.needs_restart.emplace_back(name);
  };
  structured(in_force.plugins == read.plugins, "plugins");
  structured(in_force.llvm_pass_plugins == read.llvm_pass_plugins, "llvm_pass_plugins");
  structured(in_force.toolkit_paths == read.toolkit_paths, "toolkit_paths");
  structured(same_toolkits(in_force.toolkits, read.toolkits), "toolkits");
  structured(same_blob_sharing(in_force.blob_sharing, read.blob_sharing), "blob_sharing");
  structured(in_force.fleet_targets == read.fleet_targets, "fleet.targets");
  structured(in_force.triton_builds == read.triton_builds, "triton.builds");
  structured(in_force.triton_plugins == read.triton_plugins, "triton.plugins");
  structured(in_force.triton_plugin_settings == read.triton_plugin_settings, "triton.plugin");
  structured(in_force.triton_prestart_builds == read.triton_prestart_builds, "triton.prestart_builds");
  structured(in_force.pipelines.pipelines == read.pipelines.pipelines, "pipelines");
  structured(same_edits(in_force.pipelines.edits, read.pipelines.edits), "edits");
  return changes;
}

DaemonConfig with_reloadable_keys(const DaemonConfig& in_force, const DaemonConfig& read) {
  DaemonConfig next = in_force;
  for (const ConfigKey& key : config_keys())
    if (key.reloadable) key.set(next, key.get(read));
  return next;
}

}  // namespace kjit
