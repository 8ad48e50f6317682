#include "diagnostics_service.h"

namespace kjit {

grpc::ServerUnaryReactor* DiagnosticsService::Echo(grpc::CallbackServerContext* context,
                                                   const v1::EchoRequest* request, v1::EchoResponse* response) {
  response->set_payload(request->payload());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace kjit
