// The recording binding itself: module caching, fake memory, injected
// failures, handle checks.
#include "launch/recording_driver.h"

#include <gtest/gtest.h>

#include "launch/launch_plan.h"

namespace kjit {
namespace {

TEST(RecordingDriver, SameImageLoadsOncePerContext) {
  RecordingDriver driver;
  auto first = driver.load_module("cubin-a");
  auto again = driver.load_module("cubin-a");
  auto other = driver.load_module("cubin-b");
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, *other);
  EXPECT_EQ(driver.calls(),
            (std::vector<std::string>{"cuModuleLoadData(7 bytes) -> mod#1", "cuModuleLoadData(7 bytes) -> mod#2"}));
}

TEST(RecordingDriver, FailedLoadIsNotCached) {
  RecordingDriver driver;
  driver.fail_next("cuModuleLoadData", make_error(ErrorCode::invalid_argument, "CUDA_ERROR_INVALID_IMAGE"));
  EXPECT_FALSE(driver.load_module("bad").ok());
  EXPECT_TRUE(driver.load_module("bad").ok());
  EXPECT_EQ(driver.calls().size(), 2u);
}

TEST(RecordingDriver, CopiesOutsideAllocationsFail) {
  RecordingDriver driver;
  auto buffer = driver.mem_alloc(8);
  ASSERT_TRUE(buffer.ok());
  std::vector<std::byte> bytes(16);
  EXPECT_FALSE(driver.copy_to_device(*buffer, bytes).ok());
  EXPECT_FALSE(driver.copy_to_host(bytes, *buffer + 4).ok());
  EXPECT_TRUE(driver.copy_to_device(*buffer + 4, std::span(bytes).first(4)).ok());
  EXPECT_FALSE(driver.mem_free(*buffer + 4).ok());
  EXPECT_TRUE(driver.mem_free(*buffer).ok());
  EXPECT_FALSE(driver.mem_free(*buffer).ok());
}

TEST(RecordingDriver, AllocationsDoNotTouch) {
  RecordingDriver driver;
  auto a = driver.mem_alloc(300);
  auto b = driver.mem_alloc(1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(*b, *a + 300);
  EXPECT_EQ(*b % 256, 0u);
}

TEST(RecordingDriver, UnknownHandlesAreRejected) {
  RecordingDriver driver;
  LaunchPlan plan;
  EXPECT_FALSE(driver.get_function(ModuleHandle{7}, "k").ok());
  EXPECT_FALSE(driver.launch(FunctionHandle{7}, plan, {}, k_default_stream).ok());
  EXPECT_FALSE(driver.set_function_attribute(FunctionHandle{7}, 8, 1).ok());
  EXPECT_FALSE(driver.stream_destroy(StreamHandle{7}).ok());
  EXPECT_FALSE(driver.event_record(EventHandle{7}, k_default_stream).ok());
  EXPECT_TRUE(driver.calls().empty());
}

TEST(RecordingDriver, FunctionAttributesReadBackWhatWasSet) {
  RecordingDriver driver;
  auto function = driver.get_function(*driver.load_module("m"), "k");
  ASSERT_TRUE(driver.set_function_attribute(*function, 8, 4096).ok());
  EXPECT_EQ(*driver.get_function_attribute(*function, 8), 4096);
  EXPECT_EQ(driver.calls().back(), "cuFuncGetAttribute(fn#2, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) -> 4096");
}

TEST(RecordingDriver, InjectedFailureHitsOnlyTheNextCall) {
  RecordingDriver driver;
  driver.fail_next("cuCtxSynchronize", make_error(ErrorCode::internal, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  Status first = driver.synchronize();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().message, "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_TRUE(driver.synchronize().ok());
  EXPECT_EQ(driver.calls(), (std::vector<std::string>{"cuCtxSynchronize() -> error", "cuCtxSynchronize()"}));
}

}  // namespace
}  // namespace kjit
