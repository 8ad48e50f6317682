// The fixture of the device tests: one daemon per suite, started where the
// driver loads; each test skipped where it does not.
#pragma once

#include <string>

#include "driver_check.h"
#include "support/daemon_test.h"

namespace kjit::test {

class DeviceDaemonTest : public SharedDaemonTest {
 protected:
  static void SetUpTestSuite() {
    if (driver().loaded) start_daemon();
  }
  void SetUp() override {
    if (!driver().loaded) GTEST_SKIP() << driver().why_not;
    sm_ = device_sm();
  }
  std::string target() const { return "cuda:" + std::to_string(sm_); }

  int sm_ = 0;
};

}  // namespace kjit::test
