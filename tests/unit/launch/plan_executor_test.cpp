// Plan execution through the recording binding: the exact driver calls.
#include "launch/plan_executor.h"

#include <gtest/gtest.h>

#include "kjit/kernel_args.h"
#include "launch/recording_driver.h"
#include "plan_helpers.h"

namespace kjit {
namespace {

struct Loaded {
  RecordingDriver driver;
  FunctionHandle function{};
  Loaded() {
    auto module = driver.load_module(std::string(64, 'x'));
    function = *driver.get_function(*module, "vector_add");
  }
};

KernelInfo vector_add() {
  KernelInfo info;
  info.name = "vector_add";
  info.lowered_name = "vector_add";
  return info;
}

DeviceLimits sm90() {
  return limits_for_target(*parse_target("cuda:90"));
}

TEST(PlanExecutor, SetsFunctionAttributesThenLaunchesWithAllLaunchAttributes) {
  Loaded loaded;
  LaunchConfig config = test::shape({8}, {128}, {2});
  config.dynamic_shared_bytes = 100 * 1024;
  config.programmatic_dependent_launch = true;
  const LaunchPlan plan = test::plan_of(config, "cuda:90", vector_add());
  KernelArgs args{KernelArg::pointer(0x10000), KernelArg::i32(3)};
  ASSERT_TRUE(apply_and_launch(loaded.driver, loaded.function, plan, {args.params(), {}}).ok());
  EXPECT_EQ(loaded.driver.calls(),
            (std::vector<std::string>{
                "cuModuleLoadData(64 bytes) -> mod#1",
                "cuModuleGetFunction(mod#1, \"vector_add\") -> fn#2",
                "cuFuncSetAttribute(fn#2, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 102400)",
                "cuLaunchKernelEx(fn#2, grid (8,1,1), block (128,1,1), shared 102400, stream#0, "
                "[CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION=(2,1,1), "
                "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE=1, "
                "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION=1], params)",
            }));
}

TEST(PlanExecutor, OversizedLaunchSetsModeBeforeSize) {
  Loaded loaded;
  LaunchConfig config = test::shape({1}, {128});
  config.dynamic_shared_bytes = 300 * 1024;
  const LaunchPlan plan = test::plan_of(config, "cuda:107", vector_add());
  loaded.driver.clear_calls();
  KernelArgs args{KernelArg::f32(1.5f)};
  ASSERT_TRUE(apply_and_launch(loaded.driver, loaded.function, plan, {nullptr, args.bytes()}).ok());
  EXPECT_EQ(loaded.driver.calls(),
            (std::vector<std::string>{
                "cuFuncSetAttribute(fn#2, CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE, 3)",
                "cuFuncSetAttribute(fn#2, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 307200)",
                "cuLaunchKernelEx(fn#2, grid (1,1,1), block (128,1,1), shared 307200, stream#0, "
                "[CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE=3, "
                "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE=1], packed 4 bytes)",
            }));
}

TEST(PlanExecutor, FailedAttributeStopsBeforeLaunch) {
  Loaded loaded;
  LaunchConfig config = test::shape({1}, {128});
  config.dynamic_shared_bytes = 64 * 1024;
  const LaunchPlan plan = test::plan_of(config, "cuda:90", vector_add());
  loaded.driver.clear_calls();
  loaded.driver.fail_next("cuFuncSetAttribute",
                          make_error(ErrorCode::invalid_argument, "cuFuncSetAttribute: CUDA_ERROR_INVALID_VALUE"));
  Status status = apply_and_launch(loaded.driver, loaded.function, plan, {});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "setting CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 65536: cuFuncSetAttribute: "
            "CUDA_ERROR_INVALID_VALUE");
  ASSERT_EQ(loaded.driver.calls().size(), 1u);
  EXPECT_EQ(loaded.driver.calls()[0],
            "cuFuncSetAttribute(fn#2, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536) -> error");
}

TEST(PlanExecutor, PlanErrorMakesNoDriverCall) {
  Loaded loaded;
  loaded.driver.clear_calls();
  LaunchConfig config = test::shape({1}, {128});
  config.dynamic_shared_bytes = 230 * 1024;
  auto plan = plan_and_launch(loaded.driver, loaded.function, vector_add(), sm90(), config, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("out of resource: shared memory"), std::string::npos);
  EXPECT_TRUE(loaded.driver.calls().empty());
}

TEST(PlanExecutor, CooperativeOnDeviceIsCheckedAgainstOccupancyBeforeLaunch) {
  Loaded loaded;
  loaded.driver.clear_calls();
  loaded.driver.set_occupancy(2);
  DeviceLimits limits = sm90();
  limits.from_device = true;
  limits.sm_count = 4;
  limits.max_resident_blocks_per_sm = 32;  // the hardware maximum: would allow 128 blocks
  LaunchConfig config = test::shape({9}, {256});
  config.cooperative = true;
  auto plan = plan_and_launch(loaded.driver, loaded.function, vector_add(), limits, config, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("more than the 8 sm_90 can keep resident at once (4 SMs x 2 blocks each)"),
            std::string::npos)
      << plan.error().message;
  EXPECT_EQ(loaded.driver.calls(),
            (std::vector<std::string>{"cuOccupancyMaxActiveBlocksPerMultiprocessor(fn#2, 256, 0) -> 2"}));

  config.grid = {8};
  auto fits = plan_and_launch(loaded.driver, loaded.function, vector_add(), limits, config, {});
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  EXPECT_EQ(loaded.driver.calls().back(),
            "cuLaunchKernelEx(fn#2, grid (8,1,1), block (256,1,1), shared 0, stream#0, "
            "[CU_LAUNCH_ATTRIBUTE_COOPERATIVE=1], packed 0 bytes)");
}

// What the Launch RPC does: buffers in, launch on a stream, timing, buffers out.
TEST(PlanExecutor, FullLaunchSequenceIsRecordedInOrder) {
  Loaded loaded;
  RecordingDriver& driver = loaded.driver;
  driver.clear_calls();
  std::vector<float> input = {1, 2, 3, 4};
  auto buffer = driver.mem_alloc(sizeof(float) * input.size());
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(driver.copy_to_device(*buffer, std::as_bytes(std::span(input))).ok());
  auto stream = driver.stream_create(-1);
  auto start = driver.event_create();
  auto stop = driver.event_create();
  ASSERT_TRUE(stream.ok() && start.ok() && stop.ok());
  LaunchConfig config = test::shape({1}, {4});
  KernelArgs args{KernelArg::pointer(*buffer), KernelArg::i32(4)};
  ASSERT_TRUE(driver.event_record(*start, *stream).ok());
  ASSERT_TRUE(
      plan_and_launch(driver, loaded.function, vector_add(), sm90(), config, {args.params(), {}}, *stream).ok());
  ASSERT_TRUE(driver.event_record(*stop, *stream).ok());
  ASSERT_TRUE(driver.event_synchronize(*stop).ok());
  ASSERT_TRUE(driver.event_elapsed_ms(*start, *stop).ok());
  std::vector<float> output(4);
  ASSERT_TRUE(driver.copy_to_host(std::as_writable_bytes(std::span(output)), *buffer).ok());
  EXPECT_EQ(output, input);
  ASSERT_TRUE(driver.event_destroy(*start).ok());
  ASSERT_TRUE(driver.event_destroy(*stop).ok());
  ASSERT_TRUE(driver.stream_destroy(*stream).ok());
  ASSERT_TRUE(driver.mem_free(*buffer).ok());
  EXPECT_EQ(driver.live_allocations(), 0u);
  EXPECT_EQ(driver.calls(), (std::vector<std::string>{
                                "cuMemAlloc(16) -> 0x10000",
                                "cuMemcpyHtoD(0x10000, 16 bytes)",
                                "cuStreamCreateWithPriority(non-blocking, -1) -> stream#3",
                                "cuEventCreate() -> event#4",
                                "cuEventCreate() -> event#5",
                                "cuEventRecord(event#4, stream#3)",
                                "cuLaunchKernelEx(fn#2, grid (1,1,1), block (4,1,1), shared 0, stream#3, [], params)",
                                "cuEventRecord(event#5, stream#3)",
                                "cuEventSynchronize(event#5)",
                                "cuEventElapsedTime(event#4, event#5)",
                                "cuMemcpyDtoH(0x10000, 16 bytes)",
                                "cuEventDestroy(event#4)",
                                "cuEventDestroy(event#5)",
                                "cuStreamDestroy(stream#3)",
                                "cuMemFree(0x10000)",
                            }));
}

}  // namespace
}  // namespace kjit
