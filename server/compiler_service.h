// The kjit.v1.Compiler gRPC service: translate, run the pipeline, translate
// back. No compiler logic lives here.
#pragma once

#include <memory>

#include "daemon_config.h"
#include "kjit/v1/compiler.grpc.pb.h"
#include "compile_frontend.h"

namespace kjit {

class CompilerService final : public v1::Compiler::Service {
 public:
  explicit CompilerService(std::shared_ptr<const CompileFrontend> frontend);

  grpc::Status Compile(grpc::ServerContext* context, const v1::CompileRequest* request,
                       v1::CompileResponse* response) override;
  grpc::Status DescribePipeline(grpc::ServerContext* context, const v1::DescribePipelineRequest* request,
                                v1::DescribePipelineResponse* response) override;

 private:
  std::shared_ptr<const CompileFrontend> frontend_;
};

}  // namespace kjit
