#include "server/pipeline_setup.h"

#include <spdlog/spdlog.h>

namespace kjit {

Result<std::shared_ptr<const CompilePipeline>> make_compile_pipeline(const DaemonConfig& config) {
  auto toolkit = CudaToolkit::load(config.cuda_home);
  if (auto nvrtc = toolkit->nvrtc(); !nvrtc) spdlog::warn("{}", nvrtc.error().message);
  if (auto nvjitlink = toolkit->nvjitlink(); !nvjitlink) spdlog::warn("{}", nvjitlink.error().message);
  spdlog::info("CUDA toolkit {} at {}", toolkit->version(), toolkit->home());
  PipelineSetup setup{config.pipelines, config.plugins, config.llvm_pass_plugins, {}};
  for (const ToolkitRange& range : config.toolkits) {
    auto other = CudaToolkit::load(range.cuda_home);
    if (auto nvjitlink = other->nvjitlink(); !nvjitlink)
      return make_error(ErrorCode::failed_precondition,
                        "toolkit for " + range.targets.describe() + ": " + nvjitlink.error().message);
    spdlog::info("CUDA toolkit {} at {} builds {}", other->version(), other->home(), range.targets.describe());
    setup.toolkits.push_back({range.targets, std::move(other)});
  }
  return CompilePipeline::create(std::move(toolkit), std::move(setup));
}

}  // namespace kjit
