#include "support/tls_channels.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "kjit/v1/diagnostics.grpc.pb.h"

namespace kjit::test {

std::shared_ptr<grpc::Channel> fresh_tls_channel(const std::string& address, const std::string& ca_pem) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca_pem;
  grpc::ChannelArguments args;
  // gRPC shares a connection among channels alike; this one is its own.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  static std::atomic<int> serial{0};
  args.SetInt("kjit.test.channel", serial++);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

EchoOutcome echo_on(const std::shared_ptr<grpc::Channel>& channel, std::chrono::milliseconds timeout) {
  auto stub = v1::Diagnostics::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::EchoRequest request;
  request.set_payload("rotation");
  v1::EchoResponse response;
  const grpc::Status status = stub->Echo(&context, request, &response);
  EchoOutcome outcome;
  outcome.ok = status.ok();
  if (!status.ok()) {
    outcome.error = std::to_string(status.error_code()) + ": " + status.error_message();
    return outcome;
  }
  if (std::shared_ptr<const grpc::AuthContext> auth = context.auth_context()) {
    const std::vector<grpc::string_ref> names = auth->FindPropertyValues("x509_common_name");
    if (!names.empty()) outcome.common_name.assign(names.front().data(), names.front().size());
  }
  return outcome;
}

}  // namespace kjit::test
