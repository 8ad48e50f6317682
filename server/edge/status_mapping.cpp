#include "server/edge/status_mapping.h"

namespace kjit {
namespace {
// Status messages travel in HTTP/2 trailers, which peers cap (8 KiB by
// default in gRPC); keep the excerpt well below that.
constexpr size_t k_log_excerpt_bytes = 4096;
}  // namespace

grpc::StatusCode to_grpc_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::failed_precondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::resource_exhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::unavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::deadline_exceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorCode::not_found: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::unimplemented: return grpc::StatusCode::UNIMPLEMENTED;
    case ErrorCode::internal: return grpc::StatusCode::INTERNAL;
    case ErrorCode::unauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
    case ErrorCode::permission_denied: return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorCode::cancelled: return grpc::StatusCode::CANCELLED;
  }
  return grpc::StatusCode::UNKNOWN;
}

grpc::Status to_grpc_status(const Error& error, grpc::ServerContextBase& context) {
  std::string message = error.message;
  context.AddTrailingMetadata(k_message_trailer, error.message);
  if (error.retry_after_ms > 0) {
    context.AddTrailingMetadata(k_retry_after_trailer, std::to_string(error.retry_after_ms));
    context.AddTrailingMetadata(k_grpc_retry_pushback_trailer, std::to_string(error.retry_after_ms));
  }
  if (!error.log.empty()) {
    context.AddTrailingMetadata(k_log_trailer, error.log);
    message += "\n";
    if (error.log.size() > k_log_excerpt_bytes) {
      message += error.log.substr(0, k_log_excerpt_bytes);
      message += "\n... (log truncated; " + std::to_string(error.log.size()) + " bytes in trailer " + k_log_trailer + ")";
    } else {
      message += error.log;
    }
  }
  return grpc::Status(to_grpc_code(error.code), message);
}

}  // namespace kjit
