// DaemonProcess for gtest: a daemon that does not serve, or does not exit
// cleanly, fails the test; and a fixture for a suite sharing one daemon.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "support/daemon_process.h"

// Skips the calling test where kjit was built without the CUDA toolkit.
#ifdef KJIT_TEST_HAVE_TOOLKIT
#define KJIT_SKIP_WITHOUT_TOOLKIT() static_cast<void>(0)
#else
#define KJIT_SKIP_WITHOUT_TOOLKIT() GTEST_SKIP() << "built without the CUDA toolkit"
#endif

namespace kjit::test {

class TestDaemon : public DaemonProcess {
 public:
  TestDaemon(std::vector<std::string> args = {}) : TestDaemon(DaemonOptions{std::move(args)}) {}
  explicit TestDaemon(DaemonOptions options) : DaemonProcess(std::move(options)) {
    if (!status()) ADD_FAILURE() << status().error().message;
  }
  ~TestDaemon() override {
    // A clean exit is part of the contract; under the sanitizers a leak or a
    // memory error in the daemon shows up here as a non-zero status.
    if (!stopped()) {
      EXPECT_EQ(stop(), 0) << "kjitd did not exit cleanly on SIGTERM";
    }
  }
};

// A daemon that sees the system CUDA toolkit alone, not the newer wheels of
// the project's prefix: for what a host with one toolkit answers (sm_107
// with CUDA 13.0).
inline DaemonOptions with_the_system_toolkit_only(std::vector<std::string> args = {}) {
  DaemonOptions options{std::move(args)};
  options.config = "local_toolkit_prefix = \"\"\n";
  return options;
}

// A suite whose tests share one daemon: its SetUpTestSuite calls
// start_daemon, and the daemon stops after the suite's last test.
class SharedDaemonTest : public ::testing::Test {
 protected:
  static void start_daemon(std::vector<std::string> args = {}) { start_daemon(DaemonOptions{std::move(args)}); }
  static void start_daemon(DaemonOptions options) { daemon_ = std::make_unique<TestDaemon>(std::move(options)); }
  static void TearDownTestSuite() { daemon_.reset(); }
  static Client client() { return Client(daemon_->socket_path()); }

  static inline std::unique_ptr<TestDaemon> daemon_;
};

// The same for suites whose every test compiles CUDA.
class ToolkitDaemonTest : public SharedDaemonTest {
 protected:
  void SetUp() override { KJIT_SKIP_WITHOUT_TOOLKIT(); }
};

}  // namespace kjit::test
