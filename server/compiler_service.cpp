#include "compiler_service.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "compile_translation.h"
#include "status_mapping.h"

namespace kjit {

CompilerService::CompilerService(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline)
    : config_(std::move(config)), pipeline_(std::move(pipeline)) {}

grpc::Status CompilerService::Compile(grpc::ServerContext* context, const v1::CompileRequest* request,
                                      v1::CompileResponse* response) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };

  Result<CompileJob> job = to_compile_job(*request, config_);
  if (!job) {
    spdlog::info("compile refused from {}: {}", context->peer(), job.error().message);
    return to_grpc_status(job.error(), *context);
  }
  Result<Artifact> artifact = pipeline_->run(*job);
  if (!artifact) {
    spdlog::info("compile {} for {} failed ({}): {}", job->input_name, job->target.canonical(),
                 to_string(artifact.error().code), artifact.error().message);
    return to_grpc_status(artifact.error(), *context);
  }
  size_t kernels = artifact->kernels.size();
  size_t bytes = artifact->bytes.size();
  to_compile_response(std::move(artifact.value()), *response);
  response->set_server_ms(elapsed_ms());
  spdlog::info("compiled {} for {}: {} {} bytes, {} kernel(s), {:.1f} ms", job->input_name, job->target.canonical(),
               to_string(job->wanted), bytes, kernels, response->server_ms());
  return grpc::Status::OK;
}

}  // namespace kjit
