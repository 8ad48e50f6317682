// Errors as values: a code, a message and the compiler's log. The codes follow
// gRPC's meanings; the server maps them to gRPC status in one place.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kjit {

enum class ErrorCode {
  invalid_argument,     // the request is wrong: bad source, target, option
  failed_precondition,  // the host lacks something: toolkit, driver
  resource_exhausted,   // over a configured size bound
  unavailable,          // the daemon cannot be reached
  deadline_exceeded,
  not_found,
  unimplemented,        // a reserved input kind or feature not built yet
  internal,             // a bug or an unexpected toolchain failure
  unauthenticated,      // no valid token where one is required
  permission_denied,    // a valid caller asking for what is not theirs
  cancelled,            // the caller went away, or every caller waiting on the work did
};

std::string_view to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  std::string log;  // the compiler's full log, when there is one
  // Set on a refusal the caller may retry (a full queue): how long to wait.
  uint32_t retry_after_ms = 0;
};

inline Error make_error(ErrorCode code, std::string message, std::string log = {}) {
  return Error{code, std::move(message), std::move(log)};
}

// A value or an Error. Small on purpose: C++20 has no std::expected.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// For operations that return nothing on success.
struct Ok {};
using Status = Result<Ok>;

}  // namespace kjit
