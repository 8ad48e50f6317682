// The kjit.v1.Diagnostics gRPC service: Echo, the round-trip floor. It uses
// the callback API, as Compile does, so the floor is measured on the same
// server machinery as the memory hits compared with it.
#pragma once

#include "kjit/v1/diagnostics.grpc.pb.h"

namespace kjit {

class DiagnosticsService final : public v1::Diagnostics::CallbackService {
 public:
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context, const v1::EchoRequest* request,
                                 v1::EchoResponse* response) override;
};

}  // namespace kjit
