// The kjit.v1.Compiler gRPC service: translate, run the pipeline, translate
// back. No compiler logic lives here.
#pragma once

#include <memory>

#include "daemon_config.h"
#include "kjit/v1/compiler.grpc.pb.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

class CompilerService final : public v1::Compiler::Service {
 public:
  CompilerService(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline);

  grpc::Status Compile(grpc::ServerContext* context, const v1::CompileRequest* request,
                       v1::CompileResponse* response) override;
  grpc::Status DescribePipeline(grpc::ServerContext* context, const v1::DescribePipelineRequest* request,
                                v1::DescribePipelineResponse* response) override;

 private:
  DaemonConfig config_;
  std::shared_ptr<const CompilePipeline> pipeline_;
};

}  // namespace kjit
