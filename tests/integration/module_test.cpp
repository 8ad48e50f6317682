// Client-side launch without a driver: Module::load says so, and compiling
// keeps working.
#include "kjit/module.h"

#include <gtest/gtest.h>

#include "support/cuda_kernels.h"
#include "support/daemon_test.h"

namespace kjit::test {
namespace {

TEST(ClientModule, LoadWithoutADriverIsFailedPreconditionNamingIt) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon({"--no-cache"});
  CompileRequest request;
  request.input = k_vector_add;
  request.target = "cuda:90";
  auto compiled = Client(daemon.socket_path()).compile(request);
  ASSERT_TRUE(compiled) << compiled.error().message;
  auto module = Module::load(*compiled);
  if (module) GTEST_SKIP() << "this host has a CUDA driver: the device tests cover Module";
  EXPECT_EQ(module.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(module.error().message.find("no CUDA driver on this host"), std::string::npos) << module.error().message;
}

}  // namespace
}  // namespace kjit::test
