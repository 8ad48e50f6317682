// kjitd's own accept loop on its unix socket: every connection handed to
// gRPC is recorded first under the peer name gRPC reports ("fd:<N>"), and a
// call keeps finding its own connection's entry even after its client went
// away while new connections come, which is why the gate needs no check of
// IsCancelled() after its lookup (server/access/peer_credentials.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "kjit/v1/cache.grpc.pb.h"
#include "server/daemon/socket_acceptor.h"
#include "support/eventually.h"

namespace kjit {
namespace {

// Stats blocks until its client is gone and the test has made new
// connections, then records whether its peer still names its own entry.
class HoldingService final : public v1::Cache::Service {
 public:
  explicit HoldingService(std::shared_ptr<PeerRegistry> peers) : peers_(std::move(peers)) {}
  grpc::Status Stats(grpc::ServerContext* context, const v1::StatsRequest*, v1::StatsResponse*) override {
    peer = context->peer();
    first = peers_->find(peer);
    started = true;
    cancelled = test::eventually([&] { return context->IsCancelled(); });
    test::eventually([&] { return release.load(); });
    last = peers_->find(peer);
    done = true;
    return grpc::Status::OK;
  }

  std::string peer;
  std::shared_ptr<const LocalUser> first, last;
  std::atomic<bool> started{false}, cancelled{false}, release{false}, done{false};

 private:
  std::shared_ptr<PeerRegistry> peers_;
};

TEST(SocketAcceptor, ACallFindsItsOwnConnectionAfterItsClientLeftAndNewOnesCame) {
  char dir_template[] = "/tmp/kjit-acceptor-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template, path = dir + "/s.sock";
  auto peers = std::make_shared<PeerRegistry>();
  Result<std::shared_ptr<const LocalUserPolicy>> policy =
      LocalUserPolicy::make({.daemon_uid = static_cast<uint32_t>(::geteuid())});
  ASSERT_TRUE(policy);
  HoldingService service(peers);
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();  // no listening port: the acceptor's alone
  ASSERT_NE(server, nullptr);
  Result<int> fd = listen_on_unix_socket(path);
  ASSERT_TRUE(fd) << fd.error().message;
  SocketAcceptor acceptor(*fd, peers, *policy);
  ASSERT_TRUE(acceptor.start(server.get()));

  {
    auto channel = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::StatsResponse response;
    EXPECT_EQ(v1::Cache::NewStub(channel)->Stats(&context, v1::StatsRequest{}, &response).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  }  // the channel, and with it the connection, is gone
  ASSERT_TRUE(service.started);
  EXPECT_TRUE(service.peer.starts_with("fd:")) << service.peer;
  ASSERT_NE(service.first, nullptr) << "no entry for " << service.peer;
  EXPECT_EQ(service.first->credentials.uid, ::geteuid());
  EXPECT_EQ(service.first->credentials.pid, ::getpid());
  ASSERT_TRUE(test::eventually([&] { return service.cancelled.load(); }));

  // New connections, some kept open: the kernel gives each the lowest free
  // number, so the held call's would be taken if its connection's fd were
  // closed.
  std::vector<std::shared_ptr<grpc::Channel>> kept;
  for (int i = 0; i < 20; ++i) {
    grpc::ChannelArguments own_connection;  // channels would share one connection otherwise
    own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), own_connection);
    EXPECT_TRUE(channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));
    if (i % 4 == 0) kept.push_back(channel);
  }
  const uint64_t accepted = acceptor.accepted();
  EXPECT_GE(accepted, 21u);
  service.release = true;
  ASSERT_TRUE(test::eventually([&] { return service.done.load(); }));
  EXPECT_EQ(service.last, service.first) << "the held call's " << service.peer
                                         << " was given to a new connection while the call ran";

  kept.clear();
  acceptor.stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace kjit
