// The one place where kjit's errors become gRPC statuses
// (docs/ARCHITECTURE.md, rule "Errors are values").
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "convert/wire_convert.h"  // k_log_trailer, k_message_trailer
#include "kjit/status.h"

namespace kjit {


grpc::StatusCode to_grpc_code(ErrorCode code);

// The status message holds the message and the start of the log (so any gRPC
// client shows it); the full log goes in the k_log_trailer trailer.
grpc::Status to_grpc_status(const Error& error, grpc::ServerContextBase& context);

}  // namespace kjit
