// Typed tests over setups (the store tiers, fleets of daemons), some of
// which run on a redis-server. A setup has a k_name, k_uses_redis and
// start().
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "redis_server.h"

namespace kjit::test {

// Names each typed instance after its setup: "Suite/Redis.Test".
struct SetupName {
  template <typename SetupType>
  static std::string GetName(int) {
    return SetupType::k_name;
  }
};

// Starts setup_ before each test; a setup that uses redis-server is skipped
// where it is not installed.
template <typename SetupType>
class SetupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (SetupType::k_uses_redis && !RedisServer::installed())
      GTEST_SKIP() << RedisServer::k_binary << " is not installed";
    ASSERT_TRUE(setup_.start());
  }

  SetupType setup_;
};

}  // namespace kjit::test
