#include "compile_frontend.h"

namespace kjit {

CompileFrontend::CompileFrontend(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline)
    : config_(std::move(config)), pipeline_(std::move(pipeline)) {}

Result<CompileOutcome> CompileFrontend::compile(const CompileJob& job) const {
  Result<Artifact> artifact = pipeline_->run(job);
  if (!artifact) return artifact.error();
  return CompileOutcome{std::move(artifact.value()), "compiled"};
}

}  // namespace kjit
