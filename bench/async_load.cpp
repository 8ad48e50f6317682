#include "async_load.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <vector>

#include "kjit/v1/compiler.grpc.pb.h"
#include "kjit/v1/diagnostics.grpc.pb.h"

namespace kjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<grpc::Channel> channel_to(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  // A distinct argument per channel keeps gRPC from sharing one connection
  // (subchannel) between them: each client is its own connection.
  static int next_channel = 0;
  args.SetInt("kjit.bench.channel", next_channel++);
  return grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
}

// One client: its channel, and the call it has in flight.
template <typename Stub, typename Request, typename Response>
struct Slot {
  std::unique_ptr<Stub> stub;
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  Response response;
  grpc::Status status;
};

// Keeps every slot's call in flight until the window closes; `start_call`
// issues one call on a slot, `check` judges its answer.
template <typename SlotT, typename StartCall, typename Check>
Result<AsyncLoadResult> drive(std::vector<SlotT>& slots, grpc::CompletionQueue& cq, std::chrono::duration<double> window,
                              const StartCall& start_call, const Check& check) {
  auto issue = [&](size_t i) {
    SlotT& slot = slots[i];
    slot.context = std::make_unique<grpc::ClientContext>();
    slot.context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    slot.response.Clear();
    slot.reader = start_call(slot, cq);
    slot.reader->Finish(&slot.response, &slot.status, reinterpret_cast<void*>(i));
  };
  auto next = [&](size_t& i) -> Status {
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok) || !ok) return make_error(ErrorCode::internal, "completion queue failed");
    i = reinterpret_cast<size_t>(tag);
    const SlotT& slot = slots[i];
    if (!slot.status.ok())
      return make_error(ErrorCode::internal, "call failed: " + slot.status.error_message());
    return check(slot.response);
  };
  // Warm-up: every channel connected and one call answered before timing.
  for (size_t i = 0; i < slots.size(); ++i) issue(i);
  for (size_t n = 0; n < slots.size(); ++n) {
    size_t i = 0;
    if (Status s = next(i); !s) return s.error();
  }
  AsyncLoadResult result;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(window);
  for (size_t i = 0; i < slots.size(); ++i) issue(i);
  size_t in_flight = slots.size();
  while (in_flight > 0) {
    size_t i = 0;
    if (Status s = next(i); !s) return s.error();
    --in_flight;
    if (Clock::now() < end) {
      ++result.completed;
      issue(i);
      ++in_flight;
    }
  }
  result.seconds = std::chrono::duration<double>(end - start).count();
  return result;
}

}  // namespace

Result<AsyncLoadResult> async_compile_load(const std::string& socket_path, const v1::CompileRequest& request,
                                           int clients, std::chrono::duration<double> window,
                                           const CompileCheck& check) {
  using SlotT = Slot<v1::Compiler::Stub, v1::CompileRequest, v1::CompileResponse>;
  std::vector<SlotT> slots(clients);
  for (SlotT& slot : slots) slot.stub = v1::Compiler::NewStub(channel_to(socket_path));
  grpc::CompletionQueue cq;
  Result<AsyncLoadResult> result = drive(
      slots, cq, window,
      [&](SlotT& slot, grpc::CompletionQueue& q) { return slot.stub->AsyncCompile(slot.context.get(), request, &q); },
      check);
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  return result;
}

Result<AsyncLoadResult> async_echo_load(const std::string& socket_path, const std::string& payload, int clients,
                                        std::chrono::duration<double> window) {
  using SlotT = Slot<v1::Diagnostics::Stub, v1::EchoRequest, v1::EchoResponse>;
  std::vector<SlotT> slots(clients);
  for (SlotT& slot : slots) slot.stub = v1::Diagnostics::NewStub(channel_to(socket_path));
  v1::EchoRequest request;
  request.set_payload(payload);
  grpc::CompletionQueue cq;
  Result<AsyncLoadResult> result = drive(
      slots, cq, window,
      [&](SlotT& slot, grpc::CompletionQueue& q) { return slot.stub->AsyncEcho(slot.context.get(), request, &q); },
      [&](const v1::EchoResponse& response) -> Status {
        if (response.payload().size() != payload.size())
          return make_error(ErrorCode::internal, "echo returned " + std::to_string(response.payload().size()) + " bytes");
        return Ok{};
      });
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  return result;
}

}  // namespace kjit::bench
