#include "server/compiler_service.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

#include "server/compile_translation.h"
#include "server/fatbin_compile.h"
#include "convert/wire_convert.h"
#include "pipeline/pipeline_toml.h"
#include "server/status_mapping.h"
#include "server/toolkit_listing.h"

namespace kjit {
namespace {

using Clock = CachedCompiler::Clock;

// Fills the response (or the error status) and finishes the call.
void finish_compile(grpc::CallbackServerContext& context, grpc::ServerUnaryReactor& reactor, const CompileJob& job,
                    Result<CompileOutcome> outcome, v1::CompileResponse& response, Clock::time_point received) {
  if (!outcome) {
    spdlog::info("compile {} for {} failed ({}): {}", job.input_name, job.target.canonical(),
                 to_string(outcome.error().code), outcome.error().message);
    reactor.Finish(to_grpc_status(outcome.error(), context));
    return;
  }
  const size_t kernels = outcome->artifact->kernels.size();
  const size_t bytes = outcome->artifact->bytes.size();
  response.set_cache(std::string(to_string(outcome->source)));
  to_compile_response(*outcome->artifact, outcome->timings, response);
  response.set_server_ms(std::chrono::duration<double, std::milli>(Clock::now() - received).count());
  spdlog::info("{} {} for {}: {} {} bytes, {} kernel(s), {:.1f} ms", to_string(outcome->source), job.input_name,
               job.target.canonical(), to_string(job.wanted), bytes, kernels, response.server_ms());
  reactor.Finish(grpc::Status::OK);
}

}  // namespace

CompilerService::CompilerService(std::shared_ptr<const CachedCompiler> compiler,
                                 std::shared_ptr<ElasticThreadPool> blocking_work)
    : compiler_(std::move(compiler)), blocking_work_(std::move(blocking_work)) {}

grpc::ServerUnaryReactor* CompilerService::Compile(grpc::CallbackServerContext* context,
                                                   const v1::CompileRequest* request, v1::CompileResponse* response) {
  const Clock::time_point received = Clock::now();
  if (wants_fatbin(*request)) return compile_fatbin(context, *request, response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Result<CompileJob> job = to_compile_job(*request, compiler_->config());
  if (!job) {
    spdlog::info("compile refused from {}: {}", context->peer(), job.error().message);
    reactor->Finish(to_grpc_status(job.error(), *context));
    return reactor;
  }
  Result<PlanMemo::PlanPtr> plan = compiler_->plan(*job);
  if (!plan) {
    finish_compile(*context, *reactor, *job, plan.error(), *response, received);
    return reactor;
  }
  if (std::optional<CompileOutcome> hit = compiler_->memory_hit(**plan, received)) {
    finish_compile(*context, *reactor, *job, std::move(*hit), *response, received);
    return reactor;
  }
  // The request and response stay valid until Finish; the job and plan are
  // moved into the task, which owns them.
  blocking_work_->submit([this, context, reactor, response, received, job = std::move(*job),
                          plan = std::move(*plan)] {
    finish_compile(*context, *reactor, job, compiler_->compile(job, *plan, received), *response, received);
  });
  return reactor;
}

grpc::ServerUnaryReactor* CompilerService::compile_fatbin(grpc::CallbackServerContext* context,
                                                          const v1::CompileRequest& request,
                                                          v1::CompileResponse* response) {
  const Clock::time_point received = Clock::now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Result<std::vector<CompileJob>> jobs = to_fatbin_jobs(request, compiler_->config());
  if (!jobs) {
    spdlog::info("fatbin compile refused from {}: {}", context->peer(), jobs.error().message);
    reactor->Finish(to_grpc_status(jobs.error(), *context));
    return reactor;
  }
  struct Parts {
    std::vector<CompileJob> jobs;
    std::vector<Result<CompileOutcome>> outcomes;
    std::atomic<size_t> remaining;
  };
  auto parts = std::make_shared<Parts>();
  parts->jobs = std::move(*jobs);
  parts->outcomes.assign(parts->jobs.size(), make_error(ErrorCode::internal, "not compiled"));
  parts->remaining = parts->jobs.size();
  for (size_t i = 0; i < parts->jobs.size(); ++i) {
    // Each part is a compile of its own (a worker each, as many at once as
    // there are workers) and caches under its own key.
    blocking_work_->submit([this, context, reactor, response, received, parts, i] {
      parts->outcomes[i] = compiler_->compile(parts->jobs[i]);
      if (parts->remaining.fetch_sub(1) != 1) return;
      Status done = to_fatbin_response(parts->jobs, parts->outcomes, compiler_->pipeline().toolkits(), *response);
      if (!done) {
        spdlog::info("fatbin compile of {} failed ({}): {}", parts->jobs.front().input_name,
                     to_string(done.error().code), done.error().message);
        reactor->Finish(to_grpc_status(done.error(), *context));
        return;
      }
      response->set_server_ms(std::chrono::duration<double, std::milli>(Clock::now() - received).count());
      spdlog::info("{} fatbin {} for {}: {} bytes, {} parts, {:.1f} ms", response->cache(), parts->jobs.front().input_name,
                   response->target(), response->artifact().size(), parts->jobs.size(), response->server_ms());
      reactor->Finish(grpc::Status::OK);
    });
  }
  return reactor;
}

grpc::ServerUnaryReactor* CompilerService::DescribePipeline(grpc::CallbackServerContext* context,
                                                            const v1::DescribePipelineRequest* request,
                                                            v1::DescribePipelineResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto fail = [&](const Error& error) {
    reactor->Finish(to_grpc_status(error, *context));
    return reactor;
  };
  std::optional<InputKind> input = from_proto(request->input_kind());
  if (!input) return fail(make_error(ErrorCode::invalid_argument, "input_kind is required"));
  if (!request->target().empty()) {
    if (Result<Target> target = parse_target(request->target()); !target) return fail(target.error());
  }
  const CompilePipeline& pipelines = compiler_->pipeline();
  Result<PipelineSpec> pipeline = pipelines.effective_pipeline(*input, request->pipeline());
  if (!pipeline) return fail(pipeline.error());
  response->set_name(pipeline->name);
  response->set_toml(pipeline_to_toml(*pipeline));
  for (const std::string& name : pipelines.pipeline_names()) response->add_known_pipelines(name);
  for (const LoadedPlugin& plugin : pipelines.plugins()) response->add_active_plugins(plugin.name + " " + plugin.version);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* CompilerService::ListToolkits(grpc::CallbackServerContext* context,
                                                        const v1::ListToolkitsRequest*,
                                                        v1::ListToolkitsResponse* response) {
  describe_toolkits(compiler_->pipeline().toolkits(), *response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace kjit
