#include "server/rpc/compiler_service.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>

#include "server/edge/compile_translation.h"
#include "server/compile/fatbin_compile.h"
#include "convert/wire_convert.h"
#include "pipeline/default_pipelines.h"
#include "pipeline/pipeline_toml.h"
#include "pipeline/triton_pipeline.h"
#include "backends/triton/triton_build.h"
#include "server/observe/metrics.h"
#include "server/edge/status_mapping.h"
#include "server/edge/toolkit_listing.h"

namespace kjit {
namespace {

using Clock = CachedCompiler::Clock;

}  // namespace

// One call through the gate: opened when it arrives, closed with the status
// it is answered with.
struct CompilerService::Call {
  CompilerService* service;
  grpc::CallbackServerContext* context;
  grpc::ServerUnaryReactor* reactor;
  std::string_view method;
  Clock::time_point received;
  Result<Caller> caller;

  CompileScope scope() const {
    const grpc::CallbackServerContext* ctx = context;
    return CompileScope{caller->ns, caller->label(), [ctx] { return call_gone(*ctx); }};
  }
  void finish(const grpc::Status& status) {
    service->gate_->close(caller, method, status, received);
    reactor->Finish(status);
  }
  void fail(const Error& error) { finish(to_grpc_status(error, *context)); }
  Metrics* service_metrics() const { return service->gate_->metrics(); }
};

namespace {

// Fills the response (or the error status) and finishes the call.
void finish_compile(CompilerService::Call& call, const CompileJob& job, Result<CompileOutcome> outcome,
                    v1::CompileResponse& response) {
  const double seconds = std::chrono::duration<double>(Clock::now() - call.received).count();
  Metrics* metrics = call.service_metrics();
  if (!outcome) {
    spdlog::info("compile {} for {} failed ({}): {}", job.input_name, job.target.canonical(),
                 to_string(outcome.error().code), outcome.error().message);
    // A compiler ran when there is its log to show.
    if (metrics && !outcome.error().log.empty()) metrics->record_compile(seconds, false);
    call.fail(outcome.error());
    return;
  }
  if (metrics) {
    if (outcome->source == CacheSource::compiled)
      metrics->record_compile(seconds, true);
    else if (outcome->source != CacheSource::joined)
      metrics->record_hit(to_string(outcome->source), seconds);
  }
  const size_t kernels = outcome->artifact->kernels.size();
  const size_t bytes = outcome->artifact->bytes.size();
  response.set_cache(std::string(to_string(outcome->source)));
  to_compile_response(*outcome->artifact, outcome->timings, response);
  response.set_request_id(call.caller->request_id);
  response.set_server_ms(std::chrono::duration<double, std::milli>(Clock::now() - call.received).count());
  spdlog::info("{} {} for {}: {} {} bytes, {} kernel(s), {:.1f} ms", to_string(outcome->source), job.input_name,
               job.target.canonical(), to_string(job.wanted), bytes, kernels, response.server_ms());
  call.finish(grpc::Status::OK);
}

}  // namespace

CompilerService::CompilerService(std::shared_ptr<const CachedCompiler> compiler,
                                 std::shared_ptr<ElasticThreadPool> blocking_work, std::shared_ptr<CallGate> gate)
    : compiler_(std::move(compiler)),
      blocking_work_(std::move(blocking_work)),
      gate_(gate ? std::move(gate) : std::make_shared<CallGate>(CallGate::Options{})) {}

grpc::ServerUnaryReactor* CompilerService::Compile(grpc::CallbackServerContext* context,
                                                   const v1::CompileRequest* request, v1::CompileResponse* response) {
  const Clock::time_point received = Clock::now();
  auto call = std::make_shared<Call>(Call{this, context, context->DefaultReactor(), "Compile", received,
                                          gate_->open(*context, "Compile")});
  if (!call->caller) {
    call->fail(call->caller.error());
    return call->reactor;
  }
  // Reading a Triton request (its build, its key) waits for the builds'
  // discovery at their first use: seconds, which must not be spent on a
  // gRPC thread. With every one of them waiting, none answers the
  // connections' pings, and gRPC drops the connections and their calls.
  // The request and response stay valid until Finish.
  if (!triton_builds_known()) {
    blocking_work_->submit([this, call, request, response] {
      RequestLogScope log_scope(call->caller->request_id, call->caller->who());
      start_compile(call, *request, response, true);
    });
    return call->reactor;
  }
  RequestLogScope log_scope(call->caller->request_id, call->caller->who());
  start_compile(call, *request, response, false);
  return call->reactor;
}

void CompilerService::start_compile(std::shared_ptr<Call> call, const v1::CompileRequest& request,
                                    v1::CompileResponse* response, bool on_pool) {
  if (wants_fatbin(request)) {
    compile_fatbin(call, request, response);
    return;
  }
  Result<CompileJob> job = to_compile_job(request, compiler_->config());
  if (!job) {
    spdlog::info("compile refused from {}: {}", call->context->peer(), job.error().message);
    call->fail(job.error());
    return;
  }
  Result<PlanMemo::PlanPtr> plan = compiler_->plan(*job);
  if (!plan) {
    finish_compile(*call, *job, plan.error(), *response);
    return;
  }
  if (std::optional<CompileOutcome> hit = compiler_->memory_hit(**plan, call->received, call->caller->ns)) {
    finish_compile(*call, *job, std::move(*hit), *response);
    return;
  }
  if (on_pool) {
    finish_compile(*call, *job, compiler_->compile(*job, **plan, call->received, call->scope()), *response);
    return;
  }
  // The job and plan are moved into the task, which owns them.
  blocking_work_->submit([this, call, response, job = std::move(*job), plan = std::move(*plan)] {
    RequestLogScope log_scope(call->caller->request_id, call->caller->who());
    finish_compile(*call, job, compiler_->compile(job, *plan, call->received, call->scope()), *response);
  });
}

template <typename Handler>
grpc::ServerUnaryReactor* CompilerService::serve_when_triton_builds_known(grpc::CallbackServerContext* context,
                                                                          std::string_view method, Handler handler) {
  if (triton_builds_known()) return gate_->serve_now(context, method, std::move(handler));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  blocking_work_->submit([this, context, method, reactor, handler = std::move(handler)]() mutable {
    reactor->Finish(gate_->serve(context, method, handler));
  });
  return reactor;
}

void CompilerService::compile_fatbin(std::shared_ptr<Call> call, const v1::CompileRequest& request,
                                     v1::CompileResponse* response) {
  Result<std::vector<CompileJob>> jobs = to_fatbin_jobs(request, compiler_->config());
  if (!jobs) {
    spdlog::info("fatbin compile refused from {}: {}", call->context->peer(), jobs.error().message);
    call->fail(jobs.error());
    return;
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
    blocking_work_->submit([this, call, response, parts, i] {
      RequestLogScope log_scope(call->caller->request_id, call->caller->who());
      parts->outcomes[i] = compiler_->compile(parts->jobs[i], call->scope());
      if (parts->remaining.fetch_sub(1) != 1) return;
      Status done = to_fatbin_response(parts->jobs, parts->outcomes, compiler_->pipeline().toolkits(), *response);
      if (!done) {
        spdlog::info("fatbin compile of {} failed ({}): {}", parts->jobs.front().input_name,
                     to_string(done.error().code), done.error().message);
        call->fail(done.error());
        return;
      }
      response->set_request_id(call->caller->request_id);
      response->set_server_ms(std::chrono::duration<double, std::milli>(Clock::now() - call->received).count());
      spdlog::info("{} fatbin {} for {}: {} bytes, {} parts, {:.1f} ms", response->cache(), parts->jobs.front().input_name,
                   response->target(), response->artifact().size(), parts->jobs.size(), response->server_ms());
      call->finish(grpc::Status::OK);
    });
  }
}

namespace {

Result<PipelineSpec> describe_triton(const CompilePipeline& pipelines, const PipelineSpec& pipeline, const Target& target) {
  const TritonBuild* build = default_triton_build();
  if (!build)
    return make_error(ErrorCode::failed_precondition,
                      "no Triton build was found (scripts/install-deps.sh installs two; [triton] builds names others)");
  Result<TritonPipeline> stages = describe_triton_pipeline(*build, target, pipelines.triton_plugin_paths());
  if (!stages) return stages.error();
  const IrKind gives = pipeline.stages.empty() ? IrKind::cubin : pipeline.stages.back().gives;
  return triton_pipeline_spec(pipeline.name, *stages, gives, pipelines.triton_edits(pipeline.name));
}

}  // namespace

grpc::ServerUnaryReactor* CompilerService::DescribePipeline(grpc::CallbackServerContext* context,
                                                            const v1::DescribePipelineRequest* request,
                                                            v1::DescribePipelineResponse* response) {
  return serve_when_triton_builds_known(context, "DescribePipeline", [this, context, request, response](const Caller&) -> grpc::Status {
    auto fail = [&](const Error& error) { return to_grpc_status(error, *context); };
    std::optional<InputKind> input = from_proto(request->input_kind());
    if (!input) return fail(make_error(ErrorCode::invalid_argument, "input_kind is required"));
    // The default pipelines are chosen by the target's vendor; without a
    // target, NVIDIA's, or AMD's for an input only AMD pipelines take.
    Vendor vendor = default_pipeline_for(*input, Vendor::nvidia) ? Vendor::nvidia : Vendor::amd;
    if (!request->target().empty()) {
      Result<Target> target = parse_target(request->target());
      if (!target) return fail(target.error());
      vendor = target->vendor;
    }
    const CompilePipeline& pipelines = compiler_->pipeline();
    Result<PipelineSpec> pipeline = pipelines.effective_pipeline(*input, request->pipeline(), vendor);
    if (!pipeline) return fail(pipeline.error());
    // Triton's pipeline is the build's own: its stages and MLIR passes for
    // the target, with the configuration's edits, from the default build.
    if (!triton_pass_of(*pipeline).empty() && !request->target().empty()) {
      Result<PipelineSpec> triton = describe_triton(pipelines, *pipeline, *parse_target(request->target()));
      if (!triton) return fail(triton.error());
      pipeline = std::move(triton);
    }
    response->set_name(pipeline->name);
    response->set_toml(pipeline_to_toml(*pipeline));
    for (const std::string& name : pipelines.pipeline_names()) response->add_known_pipelines(name);
    for (const LoadedPlugin& plugin : pipelines.plugins())
      response->add_active_plugins(plugin.name + " " + plugin.version);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* CompilerService::ListToolkits(grpc::CallbackServerContext* context,
                                                        const v1::ListToolkitsRequest*,
                                                        v1::ListToolkitsResponse* response) {
  return serve_when_triton_builds_known(context, "ListToolkits", [this, response](const Caller&) {
    describe_toolkits(compiler_->pipeline().toolkits(), *response);
    // The same for every build: the configuration's, not a build's.
    std::map<std::string, std::string> stages_digest;
    for (const char* backend : {"cuda", "hip"})
      if (std::string digest = compiler_->pipeline().triton_stages_digest(backend); !digest.empty())
        stages_digest[backend] = std::move(digest);
    for (v1::TritonBuild& build : *response->mutable_triton())
      build.mutable_stages_digest()->insert(stages_digest.begin(), stages_digest.end());
    return grpc::Status::OK;
  });
}

}  // namespace kjit
