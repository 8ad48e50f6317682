// The kjit.v1.Compiler gRPC service: translate, run the pipeline, translate
// back. No compiler logic lives here.
//
// Callback API: a memory hit is answered on the gRPC thread that read the
// request, with no hand-off (the hot path of a warm fleet); anything that
// may block — a disk or Redis lookup, a compile — goes to an
// ElasticThreadPool and finishes from there.
#pragma once

#include <memory>

#include "server/compile/cached_compiler.h"
#include "server/rpc/call_gate.h"
#include "server/config/daemon_config.h"
#include "server/rpc/elastic_thread_pool.h"
#include "kjit/v1/compiler.grpc.pb.h"

namespace kjit {

class CompilerService final : public v1::Compiler::CallbackService {
 public:
  // `blocking_work` must outlive every call: the daemon destroys it after
  // the server has shut down.
  // gate null: calls pass a gate without tenants or metrics.
  CompilerService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<ElasticThreadPool> blocking_work,
                  std::shared_ptr<CallGate> gate = nullptr);

  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context, const v1::CompileRequest* request,
                                    v1::CompileResponse* response) override;
  grpc::ServerUnaryReactor* DescribePipeline(grpc::CallbackServerContext* context,
                                             const v1::DescribePipelineRequest* request,
                                             v1::DescribePipelineResponse* response) override;
  grpc::ServerUnaryReactor* ListToolkits(grpc::CallbackServerContext* context, const v1::ListToolkitsRequest* request,
                                         v1::ListToolkitsResponse* response) override;

  struct Call;  // one call through the gate (compiler_service.cpp)

 private:
  // Reads the request and answers it: a memory hit at once, anything else
  // from the blocking pool (`on_pool`: this already runs there).
  void start_compile(std::shared_ptr<Call> call, const v1::CompileRequest& request, v1::CompileResponse* response,
                     bool on_pool);
  // gate_->serve_now, except while the Triton builds are still being found:
  // then on the blocking pool, since the handler may wait for them.
  template <typename Handler>
  grpc::ServerUnaryReactor* serve_when_triton_builds_known(grpc::CallbackServerContext* context,
                                                           std::string_view method, Handler handler);
  // A request for several targets: every part on the blocking pool at once,
  // the last to finish combines them and answers.
  void compile_fatbin(std::shared_ptr<Call> call, const v1::CompileRequest& request, v1::CompileResponse* response);

  std::shared_ptr<const CachedCompiler> compiler_;
  std::shared_ptr<ElasticThreadPool> blocking_work_;
  std::shared_ptr<CallGate> gate_;
};

}  // namespace kjit
