// The CUDA binding on a host without a driver (these machines have none):
// every call is failed_precondition and nothing crashes.
#include "launch/cuda_driver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "launch/launch_plan.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_with;

#if KJIT_HAVE_CUDA_HEADERS
constexpr std::string_view k_expected = "no CUDA driver on this host";
#else
constexpr std::string_view k_expected = "built without CUDA headers";
#endif

void expect_unavailable(const Status& status) {
  ASSERT_TRUE(fails_with(status, ErrorCode::failed_precondition, k_expected));
}

template <typename T>
void expect_unavailable(const Result<T>& result) {
  ASSERT_TRUE(fails_with(result, ErrorCode::failed_precondition, k_expected));
}

TEST(CudaDriver, MissingDriverLibraryMakesEveryCallFailedPrecondition) {
  CudaDriver driver(0, "libkjit-test-no-such-driver.so.1");
  expect_unavailable(driver.available());
  expect_unavailable(driver.device_attribute(16));
  expect_unavailable(driver.load_module("not a cubin"));
  expect_unavailable(driver.get_function(ModuleHandle{1}, "k"));
  expect_unavailable(driver.set_function_attribute(FunctionHandle{1}, 8, 1024));
  expect_unavailable(driver.max_active_blocks_per_sm(FunctionHandle{1}, 128, 0));
  LaunchPlan plan;
  plan.grid = {1, 1, 1};
  plan.block = {1, 1, 1};
  expect_unavailable(driver.launch(FunctionHandle{1}, plan, {}, k_default_stream));
  expect_unavailable(driver.mem_alloc(16));
  expect_unavailable(driver.stream_create(0));
  expect_unavailable(driver.event_create());
  expect_unavailable(driver.synchronize());
}

TEST(CudaDriver, DefaultLibraryOnThisHostReportsNoDriver) {
  if (void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(handle);
    GTEST_SKIP() << "this host has a CUDA driver";
  }
  CudaDriver driver;
  expect_unavailable(driver.available());
  expect_unavailable(driver.load_module("image"));
}

TEST(CudaDriver, FailedLoadIsReportedAgainNotRetriedIntoACrash) {
  CudaDriver driver(0, "libkjit-test-no-such-driver.so.1");
  for (int i = 0; i < 3; ++i) expect_unavailable(driver.available());
}

}  // namespace
}  // namespace kjit
