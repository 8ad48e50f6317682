// What every Client call shares: the channel's stubs, the per-call set-up and
// the translation of a gRPC failure, so that calls may live in files of their
// own (client/blob_calls.cpp) yet behave exactly as those in client.cpp.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "kjit/client.h"
#include "kjit/v1/cache.grpc.pb.h"
#include "kjit/v1/compiler.grpc.pb.h"
#include "kjit/v1/diagnostics.grpc.pb.h"
#include "kjit/v1/launch.grpc.pb.h"

namespace kjit {

struct Client::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Compiler::Stub> compiler;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
  std::unique_ptr<v1::Launcher::Stub> launcher;
  std::unique_ptr<v1::Cache::Stub> cache;
  std::unique_ptr<v1::Recipes::Stub> recipes;
  std::unique_ptr<v1::Diagnostics::Stub> diagnostics;
  ClientOptions options;
  std::string authorization;    // "Bearer <token>", or empty
  std::optional<Error> broken;  // why no call can be made (a TLS file unread)

  // Every call's context: its deadline and the token. No call goes out
  // from a client whose credentials could not be built.
  Status prepare(grpc::ClientContext& context) const {
    if (broken) return *broken;
    context.set_deadline(std::chrono::system_clock::now() + options.timeout);
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    return Ok{};
  }
};

// A failed call as the daemon described it: its code, its message (the
// untruncated one from the trailers when there is one), the compiler's log
// and, for a refusal worth retrying, how long to wait.
Error from_grpc_status(const grpc::Status& status, const grpc::ClientContext& context);

}  // namespace kjit
