// fork/exec of redis-server and a hiredis probe (see redis_server.h).
#include "redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/eventually.h"

namespace kjit::test {
namespace {

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

bool RedisServer::installed() {
  return ::access(k_binary, X_OK) == 0;
}

RedisServer::RedisServer() : port_(free_loopback_port()) {}

RedisServer::~RedisServer() {
  stop();
}

bool RedisServer::start() {
  if (pid_ > 0) return true;
  const std::string port = std::to_string(port_);
  const std::string log = dir_.path() + "/redis.log";
  std::vector<std::string> args = {k_binary, "--port",       port, "--bind", "127.0.0.1", "--save",
                                   "",       "--appendonly", "no", "--dir",  dir_.path()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(k_binary, argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  // Generous: a loaded machine may take seconds to start it. A server that
  // exited (its port taken meanwhile) ends the wait at once.
  const bool answers = eventually([&] {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return command({"PING"}) == "PONG";
  });
  if (answers && pid_ > 0) return true;
  stop();
  return false;
}

RedisConnection::Options RedisServer::connection_options() const {
  RedisConnection::Options options;
  options.host = "127.0.0.1";
  options.port = port_;
  return options;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{1, 0});
  if (!c || c->err) {
    if (c) redisFree(c);
    return "ERR:connect";
  }
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* reply =
      static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  std::string out = "ERR:io";
  if (reply) {
    switch (reply->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS:
        out.assign(reply->str, reply->len);
        break;
      case REDIS_REPLY_INTEGER:
        out = std::to_string(reply->integer);
        break;
      case REDIS_REPLY_NIL:
        out = "(nil)";
        break;
      case REDIS_REPLY_ERROR:
        out = "ERR:" + std::string(reply->str, reply->len);
        break;
      default:
        out = "(array)";
    }
    freeReplyObject(reply);
  }
  redisFree(c);
  return out;
}

void RedisServerTest::SetUp() {
  if (!RedisServer::installed()) GTEST_SKIP() << RedisServer::k_binary << " is not installed";
  ASSERT_TRUE(server_.start());
}

}  // namespace kjit::test
