// The kjit.v1.Diagnostics gRPC service: Echo, the round-trip floor.
#pragma once

#include "kjit/v1/diagnostics.grpc.pb.h"

namespace kjit {

class DiagnosticsService final : public v1::Diagnostics::Service {
 public:
  grpc::Status Echo(grpc::ServerContext* context, const v1::EchoRequest* request, v1::EchoResponse* response) override;
};

}  // namespace kjit
