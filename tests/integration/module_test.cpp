// Client-side launch without a driver: Module::load says so, and compiling
// keeps working.
#include <gtest/gtest.h>

#include "daemon_process.h"
#include "kjit/module.h"
#include "test_kernels.h"

namespace kjit::test {
namespace {

TEST(ClientModule, LoadWithoutADriverIsFailedPreconditionNamingIt) {
#ifndef KJIT_TEST_HAVE_TOOLKIT
  GTEST_SKIP() << "built without the CUDA toolkit";
#endif
  DaemonProcess daemon({"--no-cache"});
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
