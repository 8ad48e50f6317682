// Names of error codes, as printed by the CLI and the logs.
#include "kjit/status.h"

namespace kjit {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::failed_precondition: return "failed precondition";
    case ErrorCode::resource_exhausted: return "resource exhausted";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::deadline_exceeded: return "deadline exceeded";
    case ErrorCode::not_found: return "not found";
    case ErrorCode::unimplemented: return "unimplemented";
    case ErrorCode::internal: return "internal";
    case ErrorCode::unauthenticated: return "unauthenticated";
    case ErrorCode::permission_denied: return "permission denied";
    case ErrorCode::cancelled: return "cancelled";
  }
  return "unknown";
}

}  // namespace kjit
