// The one place where kjit's errors become gRPC statuses (DESIGN.md rule 4).
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "kjit/status.h"

namespace kjit {

// Trailing metadata carrying the full compiler log, which can be far larger
// than what fits in a status message; kjit clients read it from here.
inline constexpr const char* k_log_trailer = "kjit-log-bin";
// The status message alone, without the log excerpt appended to it.
inline constexpr const char* k_message_trailer = "kjit-message-bin";

grpc::StatusCode to_grpc_code(ErrorCode code);

// The status message holds the message and the start of the log (so any gRPC
// client shows it); the full log goes in the k_log_trailer trailer.
grpc::Status to_grpc_status(const Error& error, grpc::ServerContext& context);

}  // namespace kjit
