// A real redis-server for tests: started on a free loopback port with no
// persistence, stopped and restarted on demand, killed when the test ends.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "cache/redis_connection.h"
#include "temp_dir.h"

namespace kjit::test {

class RedisServer {
 public:
  static constexpr const char* k_binary = "/usr/bin/redis-server";
  static bool installed();

  RedisServer();  // picks the port; does not start
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts (or restarts) the server on the same port and waits until it
  // answers PING; false if it exits first or does not answer within the
  // (generous) deadline of support/eventually.h.
  bool start();
  void stop();

  int port() const { return port_; }
  // Options of a RedisConnection to this server, defaults otherwise.
  RedisConnection::Options connection_options() const;

  // Runs one command on a fresh connection and returns the reply as text
  // (integers in decimal, nil as "(nil)", errors prefixed "ERR:").
  std::string command(const std::vector<std::string>& args) const;

 private:
  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A fixture whose tests run against a started server_, and are skipped
// where redis-server is not installed.
class RedisServerTest : public ::testing::Test {
 protected:
  void SetUp() override;

  RedisServer server_;
};

}  // namespace kjit::test
