#include "client/cli/compile_json.h"

namespace kjit::cli {
namespace {
nlohmann::json dims(const Dim3& d) { return nlohmann::json::array({d.x, d.y, d.z}); }
}  // namespace

nlohmann::json kernel_to_json(const KernelInfo& kernel) {
  return {
      {"name", kernel.name},
      {"lowered_name", kernel.lowered_name},
      {"registers", kernel.registers},
      {"static_shared_bytes", kernel.static_shared_bytes},
      {"shared_section_bytes", kernel.shared_section_bytes},
      {"local_bytes", kernel.local_bytes},
      {"max_threads_per_block", kernel.max_threads_per_block},
      {"required_threads", dims(kernel.required_threads)},
      {"cluster_dims", dims(kernel.cluster_dims)},
      {"max_registers", kernel.max_registers},
      {"param_bytes", kernel.param_bytes},
      {"max_cluster_rank", kernel.max_cluster_rank},
      {"scalar_registers", kernel.scalar_registers},
      {"wavefront_size", kernel.wavefront_size},
  };
}

nlohmann::json compile_result_to_json(const CompileResult& result) {
  nlohmann::json timings = nlohmann::json::object();
  nlohmann::json stages = nlohmann::json::array();
  for (const StageTiming& t : result.timings) {
    timings[t.stage] = t.ms;
    nlohmann::json passes = nlohmann::json::array();
    for (const PassTiming& p : t.passes) passes.push_back({{"pass", p.pass}, {"ms", p.ms}});
    stages.push_back({{"stage", t.stage}, {"ms", t.ms}, {"passes", passes}});
  }
  nlohmann::json key_components = nlohmann::json::array();
  for (const KeyComponent& c : result.key_components) key_components.push_back({{"name", c.name}, {"value", c.value}});
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelInfo& k : result.kernels) kernels.push_back(kernel_to_json(k));
  nlohmann::json entries = nlohmann::json::array();
  for (const FatbinEntry& e : result.entries) {
    nlohmann::json entry_kernels = nlohmann::json::array();
    for (const KernelInfo& k : e.kernels) entry_kernels.push_back(kernel_to_json(k));
    entries.push_back({{"target", e.target},
                       {"kind", std::string(to_string(e.kind))},
                       {"size", e.size},
                       {"cache", e.cache},
                       {"key", e.key},
                       {"toolkit", e.toolkit},
                       {"kernels", entry_kernels},
                       {"notes", e.notes}});
  }
  nlohmann::json triton_files = nlohmann::json::object();
  for (const auto& [extension, text] : result.triton_files) triton_files[extension] = text.size();
  return {
      {"target", result.target},
      {"artifact_kind", std::string(to_string(result.artifact_kind))},
      {"artifact_size", result.artifact.size()},
      {"timings_ms", timings},
      {"server_ms", result.server_ms},
      {"kernels", kernels},
      {"lowered_names", result.lowered_names},
      {"log", result.log},
      {"stages", stages},
      {"key", result.key},
      {"key_components", key_components},
      {"pipeline", result.pipeline},
      {"notes", result.notes},
      {"cache", result.cache},
      {"toolkit", result.toolkit},
      {"entries", entries},
      // Triton input: the metadata object as Triton writes it (null otherwise).
      {"triton_metadata", result.triton_metadata.empty()
                              ? nlohmann::json(nullptr)
                              : nlohmann::json::parse(result.triton_metadata, nullptr, false)},
      {"triton_build", result.triton_build},
      // And the sizes of Triton's intermediate files, by extension.
      {"triton_files", triton_files},
  };
}

}  // namespace kjit::cli
