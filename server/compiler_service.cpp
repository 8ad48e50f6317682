#include "compiler_service.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "compile_translation.h"
#include "convert/wire_convert.h"
#include "pipeline/pipeline_toml.h"
#include "status_mapping.h"

namespace kjit {

CompilerService::CompilerService(std::shared_ptr<const CompileFrontend> frontend) : frontend_(std::move(frontend)) {}

grpc::Status CompilerService::Compile(grpc::ServerContext* context, const v1::CompileRequest* request,
                                      v1::CompileResponse* response) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };

  Result<CompileJob> job = to_compile_job(*request, frontend_->config());
  if (!job) {
    spdlog::info("compile refused from {}: {}", context->peer(), job.error().message);
    return to_grpc_status(job.error(), *context);
  }
  Result<CompileOutcome> outcome = frontend_->compile(*job);
  if (!outcome) {
    spdlog::info("compile {} for {} failed ({}): {}", job->input_name, job->target.canonical(),
                 to_string(outcome.error().code), outcome.error().message);
    return to_grpc_status(outcome.error(), *context);
  }
  size_t kernels = outcome->artifact.kernels.size();
  size_t bytes = outcome->artifact.bytes.size();
  response->set_cache(outcome->cache);
  to_compile_response(std::move(outcome->artifact), *response);
  response->set_server_ms(elapsed_ms());
  spdlog::info("{} {} for {}: {} {} bytes, {} kernel(s), {:.1f} ms", outcome->cache, job->input_name,
               job->target.canonical(), to_string(job->wanted), bytes, kernels, response->server_ms());
  return grpc::Status::OK;
}

}  // namespace kjit

namespace kjit {

grpc::Status CompilerService::DescribePipeline(grpc::ServerContext* context, const v1::DescribePipelineRequest* request,
                                               v1::DescribePipelineResponse* response) {
  std::optional<InputKind> input = from_proto(request->input_kind());
  if (!input) return to_grpc_status(make_error(ErrorCode::invalid_argument, "input_kind is required"), *context);
  if (!request->target().empty()) {
    if (Result<Target> target = parse_target(request->target()); !target) return to_grpc_status(target.error(), *context);
  }
  const CompilePipeline& pipelines = frontend_->pipeline();
  Result<PipelineSpec> pipeline = pipelines.effective_pipeline(*input, request->pipeline());
  if (!pipeline) return to_grpc_status(pipeline.error(), *context);
  response->set_name(pipeline->name);
  response->set_toml(pipeline_to_toml(*pipeline));
  for (const std::string& name : pipelines.pipeline_names()) response->add_known_pipelines(name);
  for (const LoadedPlugin& plugin : pipelines.plugins()) response->add_active_plugins(plugin.name + " " + plugin.version);
  return grpc::Status::OK;
}

}  // namespace kjit
