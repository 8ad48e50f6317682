#include "diagnostics_service.h"

namespace kjit {

grpc::Status DiagnosticsService::Echo(grpc::ServerContext*, const v1::EchoRequest* request, v1::EchoResponse* response) {
  response->set_payload(request->payload());
  return grpc::Status::OK;
}

}  // namespace kjit
