// kjitd under a service manager: systemd's notification protocol (a unix
// datagram socket named by NOTIFY_SOCKET), spoken by a real kjitd to a socket
// this test binds as systemd would. READY=1 must come only once the socket
// answers, and STOPPING=1 when a SIGTERM starts the drain.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "support/child_process.h"
#include "support/daemon_process.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

// The service manager's end: a datagram socket at `path`, read until a
// deadline.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path.copy(address.sun_path, sizeof(address.sun_path) - 1);
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool bound() const { return bound_; }

  // The next message, or "" when none came before the deadline.
  std::string next(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd ready{fd_, POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[4096];
      const ssize_t got = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (got > 0) return std::string(buffer, static_cast<size_t>(got));
    }
  }

  // Messages until one containing `wanted`; all of them, in order.
  std::vector<std::string> until(const std::string& wanted, std::chrono::seconds bound) {
    std::vector<std::string> seen;
    const auto deadline = std::chrono::steady_clock::now() + bound;
    for (std::string message = next(deadline); !message.empty(); message = next(deadline)) {
      seen.push_back(message);
      if (message.find(wanted) != std::string::npos) break;
    }
    return seen;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

bool contains(const std::vector<std::string>& messages, const std::string& wanted) {
  for (const std::string& m : messages)
    if (m.find(wanted) != std::string::npos) return true;
  return false;
}

TEST(ServiceManager, ReadyOnlyOnceServingAndStoppingWhenDraining) {
  TempDir dir;
  const std::string notify_path = dir.path() + "/notify.sock";
  const std::string socket_path = dir.path() + "/kjitd.sock";
  NotifySocket manager(notify_path);
  ASSERT_TRUE(manager.bound()) << notify_path;

  Result<ChildProcess> kjitd = ChildProcess::spawn(
      {kjitd_path(), "--socket", socket_path, "--cache-dir", dir.path() + "/cache", "--log-level", "warn"},
      SpawnOptions{.env = {"NOTIFY_SOCKET=" + notify_path}});
  ASSERT_TRUE(kjitd) << kjitd.error().message;

  // Generous: a loaded machine may take many seconds to start kjitd.
  const std::vector<std::string> before_ready = manager.until("READY=1", std::chrono::seconds(60));
  ASSERT_TRUE(contains(before_ready, "READY=1")) << "no READY=1 within 60 s";
  // Asked once, right after READY=1 and without waiting: readiness means
  // the socket serves now.
  Client client(socket_path, ClientOptions{std::chrono::seconds(10)});
  Result<std::string> health = client.health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ(*health, "SERVING");
  EXPECT_TRUE(contains(before_ready, "STATUS=serving on unix:" + socket_path)) << before_ready.back();
  EXPECT_FALSE(contains(before_ready, "STOPPING=1"));
  // The socket was bound under a name of its own and moved into place.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().rfind(".kjitd-bind-", 0), std::string::npos) << entry.path();

  kjitd->signal(SIGTERM);
  const std::vector<std::string> after = manager.until("STOPPING=1", std::chrono::seconds(30));
  ASSERT_TRUE(contains(after, "STOPPING=1")) << "no STOPPING=1 after SIGTERM";
  EXPECT_TRUE(contains(after, "STATUS=draining: ")) << after.back();
  EXPECT_EQ(kjitd->wait(), 0);
}

TEST(ServiceManager, AManagerThatIsGoneDoesNotStopTheDaemon) {
  // NOTIFY_SOCKET naming nothing (a manager that went away): the daemon logs
  // it and serves as without one.
  TempDir dir;
  DaemonOptions options;
  options.env = {"NOTIFY_SOCKET=" + dir.path() + "/nobody-listens.sock"};
  DaemonProcess daemon(options);
  ASSERT_TRUE(daemon.status()) << daemon.status().error().message;
  EXPECT_EQ(daemon.stop(), 0);
}

}  // namespace
}  // namespace kjit::test
