// Device limits from the target table and from a (recorded) device.
#include "launch/device_limits.h"

#include <gtest/gtest.h>

#include "launch/cuda_enums.h"
#include "launch/recording_driver.h"

namespace kjit {
namespace {

namespace ids = cuda_ids;

bool has_note(const DeviceLimits& limits, std::string_view text) {
  for (const auto& note : limits.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

// An H100-like device (compute capability 9.0).
void describe_device(RecordingDriver& driver, int major, int minor) {
  driver.set_device_attribute(ids::k_device_compute_capability_major, major);
  driver.set_device_attribute(ids::k_device_compute_capability_minor, minor);
  driver.set_device_attribute(ids::k_device_max_threads_per_block, 1024);
  driver.set_device_attribute(ids::k_device_max_shared_memory_per_block, 49152);
  driver.set_device_attribute(ids::k_device_max_shared_memory_per_block_optin, 232448);
  driver.set_device_attribute(ids::k_device_max_shared_memory_per_multiprocessor, 233472);
  driver.set_device_attribute(ids::k_device_multiprocessor_count, 132);
  driver.set_device_attribute(ids::k_device_max_blocks_per_multiprocessor, 32);
  driver.set_device_attribute(ids::k_device_cluster_launch, 1);
}

TEST(DeviceLimits, TableGivesSm90OptInAndClusterSizes) {
  DeviceLimits limits = limits_for_target(*parse_target("cuda:90a"));
  EXPECT_EQ(limits.sm, 90u);
  EXPECT_EQ(limits.target, "sm_90a");
  EXPECT_EQ(limits.default_shared_per_block, 49152u);
  EXPECT_EQ(limits.optin_shared_per_block, 232448u);
  EXPECT_EQ(limits.shared_per_sm, 233472u);
  EXPECT_EQ(limits.oversized_shared_per_block, 0u);
  EXPECT_EQ(limits.portable_cluster_size, 8u);
  EXPECT_EQ(limits.max_cluster_size, 16u);
  EXPECT_EQ(limits.sm_count, 0u);
  EXPECT_FALSE(limits.from_device);
  EXPECT_TRUE(has_note(limits, "target table"));
}

TEST(DeviceLimits, Sm107OversizedLimitIsPerSmLessReserveAndUnverified) {
  DeviceLimits limits = limits_for_target(*parse_target("cuda:107"));
  EXPECT_EQ(limits.optin_shared_per_block, 232448u);
  EXPECT_EQ(limits.oversized_shared_per_block, 334848u);  // 328 KiB - 1 KiB
  EXPECT_TRUE(has_note(limits, "unverified"));
}

TEST(DeviceLimits, Sm80HasNoClusters) {
  DeviceLimits limits = limits_for_target(*parse_target("cuda:80"));
  EXPECT_EQ(limits.max_cluster_size, 0u);
  EXPECT_EQ(limits.portable_cluster_size, 0u);
  EXPECT_EQ(limits.optin_shared_per_block, 166912u);
}

TEST(DeviceLimits, FromDeviceReadsDriverAttributes) {
  RecordingDriver driver;
  describe_device(driver, 9, 0);
  driver.set_device_attribute(ids::k_device_max_shared_memory_per_block_optin, 200000);  // differs from the table
  auto limits = limits_from_device(driver);
  ASSERT_TRUE(limits.ok()) << limits.error().message;
  EXPECT_TRUE(limits->from_device);
  EXPECT_EQ(limits->sm, 90u);
  EXPECT_EQ(limits->target, "sm_90");
  EXPECT_EQ(limits->optin_shared_per_block, 200000u);
  EXPECT_EQ(limits->sm_count, 132u);
  EXPECT_EQ(limits->max_resident_blocks_per_sm, 32u);
  EXPECT_EQ(limits->max_cluster_size, 16u);
  EXPECT_EQ(limits->oversized_shared_per_block, 0u);
  // Attribute 150 is asked only on 10.7.
  for (const auto& call : driver.calls()) {
    EXPECT_EQ(call.find("MAX_OVERSIZED"), std::string::npos) << call;
  }
}

TEST(DeviceLimits, FromDeviceOnCapability107ReadsOversizedAttribute150) {
  RecordingDriver driver;
  describe_device(driver, 10, 7);
  driver.set_device_attribute(150, 300000);
  auto limits = limits_from_device(driver);
  ASSERT_TRUE(limits.ok()) << limits.error().message;
  EXPECT_EQ(limits->sm, 107u);
  EXPECT_EQ(limits->oversized_shared_per_block, 300000u);
  EXPECT_EQ(driver.calls().back(),
            "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK) -> 300000");
}

TEST(DeviceLimits, FromDeviceWithoutAttribute150FallsBackToTableAndSaysSo) {
  RecordingDriver driver;
  describe_device(driver, 10, 7);
  auto limits = limits_from_device(driver);
  ASSERT_TRUE(limits.ok());
  EXPECT_EQ(limits->oversized_shared_per_block, 334848u);
  EXPECT_TRUE(has_note(*limits, "attribute 150"));
}

TEST(DeviceLimits, FromDeviceFailsWhenTheDriverDoes) {
  RecordingDriver driver;  // no attributes at all
  EXPECT_FALSE(limits_from_device(driver).ok());
}

TEST(DeviceLimits, OccupancyReplacesTheHardwareMaximum) {
  RecordingDriver driver;
  auto module = driver.load_module("image");
  auto function = driver.get_function(*module, "k");
  driver.set_occupancy(3);
  DeviceLimits limits = limits_for_target(*parse_target("cuda:90"));
  limits.max_resident_blocks_per_sm = 32;
  ASSERT_TRUE(refine_with_occupancy(limits, driver, *function, 256, 1024).ok());
  EXPECT_EQ(limits.max_resident_blocks_per_sm, 3u);
  EXPECT_EQ(driver.calls().back(), "cuOccupancyMaxActiveBlocksPerMultiprocessor(fn#2, 256, 1024) -> 3");

  driver.set_occupancy(0);
  auto none = refine_with_occupancy(limits, driver, *function, 1024, 200000);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("occupancy 0"), std::string::npos);
}

}  // namespace
}  // namespace kjit
