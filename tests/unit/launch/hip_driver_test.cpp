// The HIP binding without a GPU: on a host without the runtime every call is
// failed_precondition; which plans HIP can execute is a pure check; and a
// fake runtime (C functions with HIP's signatures, bound through the
// SymbolLookup constructor) shows the exact HIP calls the binding makes, with
// HIP's own attribute ids rather than CUDA's.
#include "launch/hip_driver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kjit/kernel_args.h"
#include "launch/cuda_enums.h"
#include "launch/device_limits.h"
#include "launch/launch_plan.h"
#include "launch/plan_executor.h"
#include "plan_helpers.h"
#include "support/fails_with.h"

namespace kjit {
namespace {

using test::fails_exactly;
using test::fails_with;
using test::kernel;
using test::limits_of;
using test::plan_of;
using test::shape;

namespace ids = cuda_ids;

constexpr uint32_t k_kib = 1024;
constexpr std::string_view k_no_runtime = "no HIP runtime on this host (";

void expect_no_runtime(const Status& status, std::string_view library) {
  ASSERT_TRUE(fails_with(status, ErrorCode::failed_precondition, k_no_runtime));
  EXPECT_NE(status.error().message.find(library), std::string::npos) << status.error().message;
}

template <typename T>
void expect_no_runtime(const Result<T>& result, std::string_view library) {
  ASSERT_FALSE(result.ok());
  expect_no_runtime(Status(result.error()), library);
}

// ---- no runtime ------------------------------------------------------------

constexpr const char* k_missing_library = "libkjit-test-no-such-amdhip64.so";

TEST(HipDriverWithoutRuntime, EveryCallIsFailedPrecondition) {
  HipDriver driver(0, k_missing_library);
  expect_no_runtime(driver.available(), k_missing_library);
  expect_no_runtime(driver.device_attribute(ids::k_device_multiprocessor_count), k_missing_library);
  expect_no_runtime(driver.load_module("not a code object"), k_missing_library);
  expect_no_runtime(driver.get_function(ModuleHandle{1}, "k"), k_missing_library);
  expect_no_runtime(driver.set_function_attribute(FunctionHandle{1}, ids::k_func_max_dynamic_shared_size_bytes, 1024),
                    k_missing_library);
  expect_no_runtime(driver.get_function_attribute(FunctionHandle{1}, ids::k_func_max_threads_per_block),
                    k_missing_library);
  expect_no_runtime(driver.max_active_blocks_per_sm(FunctionHandle{1}, 128, 0), k_missing_library);
  LaunchPlan plan;
  plan.grid = {1, 1, 1};
  plan.block = {1, 1, 1};
  expect_no_runtime(driver.launch(FunctionHandle{1}, plan, {}, k_default_stream), k_missing_library);
  expect_no_runtime(driver.mem_alloc(16), k_missing_library);
  expect_no_runtime(driver.mem_free(0x1000), k_missing_library);
  std::byte bytes[4]{};
  expect_no_runtime(driver.copy_to_device(0x1000, bytes), k_missing_library);
  expect_no_runtime(driver.copy_to_host(bytes, 0x1000), k_missing_library);
  expect_no_runtime(driver.stream_create(0), k_missing_library);
  expect_no_runtime(driver.stream_destroy(StreamHandle{1}), k_missing_library);
  expect_no_runtime(driver.event_create(), k_missing_library);
  expect_no_runtime(driver.event_record(EventHandle{1}, k_default_stream), k_missing_library);
  expect_no_runtime(driver.event_synchronize(EventHandle{1}), k_missing_library);
  expect_no_runtime(driver.event_elapsed_ms(EventHandle{1}, EventHandle{2}), k_missing_library);
  expect_no_runtime(driver.event_destroy(EventHandle{1}), k_missing_library);
  expect_no_runtime(driver.synchronize(), k_missing_library);
  EXPECT_EQ(driver.name(), "hip");
}

TEST(HipDriverWithoutRuntime, FailedLoadIsReportedAgainNotRetriedIntoACrash) {
  HipDriver driver(0, k_missing_library);
  const std::string first = driver.available().error().message;
  for (int i = 0; i < 3; ++i) {
    expect_no_runtime(driver.available(), k_missing_library);
    EXPECT_EQ(driver.available().error().message, first);
  }
}

TEST(HipDriverWithoutRuntime, DefaultLibrariesAreTriedInOrder) {
  for (const char* library : k_hip_runtime_libraries) {
    if (void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL)) {
      dlclose(handle);
      GTEST_SKIP() << "this host has a HIP runtime (" << library << ")";
    }
  }
  HipDriver driver;
  const Status status = driver.available();
  for (const char* library : k_hip_runtime_libraries) expect_no_runtime(status, library);
  const std::string& message = status.error().message;
  EXPECT_LT(message.find("libamdhip64.so:"), message.find("libamdhip64.so.6"));
  EXPECT_LT(message.find("libamdhip64.so.6"), message.find("libamdhip64.so.5"));
}

// ---- which plans HIP can execute ----------------------------------------------

void expect_unimplemented(const Status& status, std::string_view text) {
  ASSERT_TRUE(fails_with(status, ErrorCode::unimplemented, text));
  EXPECT_NE(status.error().message.find("not available on HIP"), std::string::npos) << status.error().message;
}

TEST(HipPlanSupport, PlainLaunchIsSupported) {
  EXPECT_TRUE(check_plan_supported_on_hip(plan_of(shape({8}, {128}))).ok());
}

TEST(HipPlanSupport, HundredKiBOfDynamicSharedMemoryIsSupported) {
  LaunchConfig config = shape({8}, {128});
  config.dynamic_shared_bytes = 100 * k_kib;
  const LaunchPlan plan = plan_of(config);
  ASSERT_EQ(plan.function_attributes.size(), 1u);
  EXPECT_EQ(plan.function_attributes[0].id, ids::k_func_max_dynamic_shared_size_bytes);
  EXPECT_TRUE(check_plan_supported_on_hip(plan).ok());
}

TEST(HipPlanSupport, CooperativeIsSupported) {
  LaunchConfig config = shape({4}, {128});
  config.cooperative = true;
  EXPECT_TRUE(check_plan_supported_on_hip(plan_of(config)).ok());
}

TEST(HipPlanSupport, PriorityIsSupported) {
  LaunchConfig config = shape({4}, {128});
  config.stream_priority = -1;
  EXPECT_TRUE(check_plan_supported_on_hip(plan_of(config)).ok());
}

TEST(HipPlanSupport, ClusterIsUnimplementedWithTheAttributes) {
  const Status status = check_plan_supported_on_hip(plan_of(shape({8}, {128}, {2})));
  ASSERT_TRUE(fails_exactly(
      status, ErrorCode::unimplemented,
      "a thread block cluster is not available on HIP (kernel k sets CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = "
      "(2,1,1), CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 1)"));
}

TEST(HipPlanSupport, KernelCompiledWithClusterDimsIsUnimplemented) {
  KernelInfo clustered = kernel();
  clustered.cluster_dims = {2, 1, 1};
  expect_unimplemented(check_plan_supported_on_hip(plan_of(shape({8}, {128}), "cuda:90", clustered)),
                       "a thread block cluster compiled into the kernel is not available on HIP (kernel k sets "
                       "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 1)");
}

TEST(HipPlanSupport, NonPortableClusterNamesBothFeatures) {
  const Status status = check_plan_supported_on_hip(plan_of(shape({32}, {128}, {16})));
  expect_unimplemented(status, "a thread block cluster and a cluster of more than 8 blocks are not available on HIP");
  EXPECT_NE(status.error().message.find("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 1"), std::string::npos);
}

TEST(HipPlanSupport, OversizedSharedMemoryIsUnimplemented) {
  LaunchConfig config = shape({8}, {128});
  config.dynamic_shared_bytes = 300 * k_kib;
  const LaunchPlan plan = plan_of(config, "cuda:107");
  ASSERT_TRUE(plan.oversized_shared_memory);
  const Status status = check_plan_supported_on_hip(plan);
  expect_unimplemented(status, "the oversized shared memory mode is not available on HIP");
  // The SPREAD preference it forces is listed, not named as a feature.
  EXPECT_EQ(status.error().message.find("scheduling policy is"), std::string::npos) << status.error().message;
  EXPECT_NE(status.error().message.find("CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE"), std::string::npos);
}

TEST(HipPlanSupport, DependentLaunchIsUnimplemented) {
  LaunchConfig config = shape({8}, {128});
  config.programmatic_dependent_launch = true;
  expect_unimplemented(check_plan_supported_on_hip(plan_of(config)), "programmatic dependent launch");
}

TEST(HipPlanSupport, EverythingAtOnceListsEachFeatureOnce) {
  LaunchConfig config = shape({32}, {128}, {16});
  config.cooperative = true;
  config.programmatic_dependent_launch = true;
  config.stream_priority = -1;
  config.dynamic_shared_bytes = 100 * k_kib;
  const Status status = check_plan_supported_on_hip(plan_of(config));
  expect_unimplemented(status,
                       "a thread block cluster, programmatic dependent launch and a cluster of more than 8 blocks "
                       "are not available on HIP");
  EXPECT_EQ(status.error().message.find("COOPERATIVE"), std::string::npos);
  EXPECT_EQ(status.error().message.find("PRIORITY"), std::string::npos);
  EXPECT_EQ(status.error().message.find("MAX_DYNAMIC"), std::string::npos);
}

// ---- a fake HIP runtime -------------------------------------------------------

// HIP's ids as the fake answers them: hipDeviceAttribute_t values, not CUDA's.
constexpr int k_hip_cc_major = 23;
constexpr int k_hip_max_blocks_per_cu = 25;
constexpr int k_hip_max_threads_per_block = 56;
constexpr int k_hip_cc_minor = 61;
constexpr int k_hip_cu_count = 63;
constexpr int k_hip_max_shared_per_block = 74;
constexpr int k_hip_shared_per_block_optin = 75;
constexpr int k_hip_shared_per_cu = 76;
constexpr int k_hip_amd_max_shared_per_cu = 10002;

constexpr int k_hip_error_invalid_value = 1;
constexpr int k_hip_error_out_of_memory = 2;
constexpr int k_hip_error_invalid_device_function = 98;
constexpr int k_hip_error_no_device = 100;

struct FakeRuntime {
  std::vector<std::string> calls;  // every call but the device bookkeeping
  std::set<std::string> absent;    // symbols the lookup does not find
  std::map<int, int> device_attributes;
  int init_result = 0;
  int init_calls = 0;
  int device_count = 1;
  int set_device_calls = 0;
  int func_set_result = 0;
  int max_dynamic_shared = 64 * k_kib;  // HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int malloc_result = 0;
  uintptr_t next_handle = 0x1000;
};

FakeRuntime* g_fake = nullptr;
thread_local int t_current_device = -1;

std::string hex(const void* pointer) {
  if (!pointer) return "null";
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(pointer)));
  return text;
}

void* new_handle() {
  return reinterpret_cast<void*>(g_fake->next_handle++);
}

std::string dims(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

// Each has the C signature the binding binds (handles as void*, enums as int).
int fake_init(unsigned flags) {
  ++g_fake->init_calls;
  return flags == 0 ? g_fake->init_result : k_hip_error_invalid_value;
}
int fake_get_device_count(int* count) {
  *count = g_fake->device_count;
  return g_fake->device_count > 0 ? 0 : k_hip_error_no_device;
}
int fake_set_device(int device) {
  ++g_fake->set_device_calls;
  t_current_device = device;
  return 0;
}
int fake_get_device(int* device) {
  *device = t_current_device;
  return 0;
}
int fake_device_get_attribute(int* value, int attribute, int device) {
  g_fake->calls.push_back("hipDeviceGetAttribute(" + std::to_string(attribute) + ", " + std::to_string(device) + ")");
  auto it = g_fake->device_attributes.find(attribute);
  if (it == g_fake->device_attributes.end()) return k_hip_error_invalid_value;
  *value = it->second;
  return 0;
}
int fake_module_load_data(void** module, const void* image) {
  g_fake->calls.push_back(std::string("hipModuleLoadData(") + static_cast<const char*>(image) + ")");
  *module = new_handle();
  return 0;
}
int fake_module_get_function(void** function, void* module, const char* name) {
  g_fake->calls.push_back("hipModuleGetFunction(" + hex(module) + ", " + name + ")");
  *function = new_handle();
  return 0;
}
int fake_func_set_attribute(const void* function, int attribute, int value) {
  g_fake->calls.push_back("hipFuncSetAttribute(" + hex(function) + ", " + std::to_string(attribute) + ", " +
                          std::to_string(value) + ")");
  return g_fake->func_set_result;
}
int fake_func_get_attribute(int* value, int attribute, void* function) {
  g_fake->calls.push_back("hipFuncGetAttribute(" + std::to_string(attribute) + ", " + hex(function) + ")");
  *value = attribute == 8 ? g_fake->max_dynamic_shared : 256;
  return 0;
}
std::string launch_text(const char* call, void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void* stream) {
  return std::string(call) + "(" + hex(function) + ", grid " + dims(gx, gy, gz) + ", block " + dims(bx, by, bz) +
         ", shared " + std::to_string(shared) + ", stream " + hex(stream);
}
int fake_module_launch_kernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  std::string line = launch_text("hipModuleLaunchKernel", function, gx, gy, gz, bx, by, bz, shared, stream);
  if (params) line += ", params";
  if (extra) {
    // HIP_LAUNCH_PARAM_BUFFER_POINTER, buffer, _BUFFER_SIZE, &size, _END.
    const bool well_formed = extra[0] == reinterpret_cast<void*>(1) && extra[2] == reinterpret_cast<void*>(2) &&
                             extra[4] == reinterpret_cast<void*>(3);
    if (!well_formed) return k_hip_error_invalid_value;
    line += ", extra " + std::to_string(*static_cast<size_t*>(extra[3])) + " bytes";
  }
  g_fake->calls.push_back(line + ")");
  return 0;
}
int fake_module_launch_cooperative_kernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                          unsigned by, unsigned bz, unsigned shared, void* stream, void** params) {
  g_fake->calls.push_back(
      launch_text("hipModuleLaunchCooperativeKernel", function, gx, gy, gz, bx, by, bz, shared, stream) +
      (params ? ", params)" : ")"));
  return 0;
}
int fake_occupancy(int* blocks, void* function, int block_size, size_t dynamic_shared) {
  g_fake->calls.push_back("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(" + hex(function) + ", " +
                          std::to_string(block_size) + ", " + std::to_string(dynamic_shared) + ")");
  *blocks = 3;
  return 0;
}
int fake_malloc(void** pointer, size_t bytes) {
  g_fake->calls.push_back("hipMalloc(" + std::to_string(bytes) + ")");
  if (g_fake->malloc_result != 0) return g_fake->malloc_result;
  *pointer = new_handle();
  return 0;
}
int fake_free(void* pointer) {
  g_fake->calls.push_back("hipFree(" + hex(pointer) + ")");
  return 0;
}
int fake_memcpy_htod(void* destination, const void*, size_t bytes) {
  g_fake->calls.push_back("hipMemcpyHtoD(" + hex(destination) + ", " + std::to_string(bytes) + ")");
  return 0;
}
int fake_memcpy_dtoh(void*, void* source, size_t bytes) {
  g_fake->calls.push_back("hipMemcpyDtoH(" + hex(source) + ", " + std::to_string(bytes) + ")");
  return 0;
}
int fake_stream_create_with_priority(void** stream, unsigned flags, int priority) {
  *stream = new_handle();
  g_fake->calls.push_back("hipStreamCreateWithPriority(" + std::to_string(flags) + ", " + std::to_string(priority) +
                          ") = " + hex(*stream));
  return 0;
}
int fake_stream_destroy(void* stream) {
  g_fake->calls.push_back("hipStreamDestroy(" + hex(stream) + ")");
  return 0;
}
int fake_event_create(void** event) {
  *event = new_handle();
  g_fake->calls.push_back("hipEventCreate() = " + hex(*event));
  return 0;
}
int fake_event_record(void* event, void* stream) {
  g_fake->calls.push_back("hipEventRecord(" + hex(event) + ", " + hex(stream) + ")");
  return 0;
}
int fake_event_synchronize(void* event) {
  g_fake->calls.push_back("hipEventSynchronize(" + hex(event) + ")");
  return 0;
}
int fake_event_elapsed_time(float* ms, void*, void*) {
  *ms = 1.5f;
  return 0;
}
int fake_event_destroy(void* event) {
  g_fake->calls.push_back("hipEventDestroy(" + hex(event) + ")");
  return 0;
}
int fake_device_synchronize() {
  g_fake->calls.push_back("hipDeviceSynchronize()");
  return 0;
}
const char* fake_get_error_string(int error) {
  return error == k_hip_error_out_of_memory ? "out of memory" : "fake error";
}
const char* fake_get_error_name(int error) {
  switch (error) {
    case k_hip_error_invalid_value:
      return "hipErrorInvalidValue";
    case k_hip_error_out_of_memory:
      return "hipErrorOutOfMemory";
    case k_hip_error_no_device:
      return "hipErrorNoDevice";
    default:
      return "hipErrorUnknown";
  }
}

template <typename Function>
void* address_of(Function* function) {
  return reinterpret_cast<void*>(function);
}

const std::map<std::string, void*>& fake_symbols() {
  static const std::map<std::string, void*> symbols = {
      {"hipInit", address_of(fake_init)},
      {"hipGetDeviceCount", address_of(fake_get_device_count)},
      {"hipSetDevice", address_of(fake_set_device)},
      {"hipGetDevice", address_of(fake_get_device)},
      {"hipDeviceGetAttribute", address_of(fake_device_get_attribute)},
      {"hipModuleLoadData", address_of(fake_module_load_data)},
      {"hipModuleGetFunction", address_of(fake_module_get_function)},
      {"hipFuncSetAttribute", address_of(fake_func_set_attribute)},
      {"hipFuncGetAttribute", address_of(fake_func_get_attribute)},
      {"hipModuleLaunchKernel", address_of(fake_module_launch_kernel)},
      {"hipModuleLaunchCooperativeKernel", address_of(fake_module_launch_cooperative_kernel)},
      {"hipModuleOccupancyMaxActiveBlocksPerMultiprocessor", address_of(fake_occupancy)},
      {"hipMalloc", address_of(fake_malloc)},
      {"hipFree", address_of(fake_free)},
      {"hipMemcpyHtoD", address_of(fake_memcpy_htod)},
      {"hipMemcpyDtoH", address_of(fake_memcpy_dtoh)},
      {"hipStreamCreateWithPriority", address_of(fake_stream_create_with_priority)},
      {"hipStreamDestroy", address_of(fake_stream_destroy)},
      {"hipEventCreate", address_of(fake_event_create)},
      {"hipEventRecord", address_of(fake_event_record)},
      {"hipEventSynchronize", address_of(fake_event_synchronize)},
      {"hipEventElapsedTime", address_of(fake_event_elapsed_time)},
      {"hipEventDestroy", address_of(fake_event_destroy)},
      {"hipDeviceSynchronize", address_of(fake_device_synchronize)},
      {"hipGetErrorString", address_of(fake_get_error_string)},
      {"hipGetErrorName", address_of(fake_get_error_name)},
  };
  return symbols;
}

// An MI300X-like device as HIP describes one (gfx942: "compute capability" 9.4).
std::map<int, int> mi300_attributes() {
  return {{k_hip_cc_major, 9},
          {k_hip_cc_minor, 4},
          {k_hip_max_threads_per_block, 1024},
          {k_hip_max_shared_per_block, 64 * k_kib},
          {k_hip_shared_per_block_optin, 64 * k_kib},
          {k_hip_shared_per_cu, 64 * k_kib},
          {k_hip_cu_count, 304},
          {k_hip_max_blocks_per_cu, 32}};
}

class HipDriverOnFakeRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = &fake_;
    t_current_device = -1;
    fake_.device_attributes = mi300_attributes();
  }
  void TearDown() override { g_fake = nullptr; }

  std::unique_ptr<HipDriver> make_driver() {
    FakeRuntime* fake = &fake_;
    return std::make_unique<HipDriver>(
        0,
        [fake](const char* symbol) -> void* {
          if (fake->absent.count(symbol)) return nullptr;
          auto it = fake_symbols().find(symbol);
          return it == fake_symbols().end() ? nullptr : it->second;
        },
        "fake libamdhip64");
  }

  // A loaded kernel: returns its handle and forgets the calls so far.
  FunctionHandle load_kernel(HipDriver& driver) {
    Result<ModuleHandle> module = driver.load_module("code object");
    EXPECT_TRUE(module.ok());
    Result<FunctionHandle> function = driver.get_function(*module, "k");
    EXPECT_TRUE(function.ok());
    fake_.calls.clear();
    return *function;
  }

  FakeRuntime fake_;
};

TEST_F(HipDriverOnFakeRuntime, OpensOnceAndMakesTheDeviceCurrent) {
  auto driver = make_driver();
  ASSERT_TRUE(driver->available().ok()) << driver->available().error().message;
  ASSERT_TRUE(driver->available().ok());
  EXPECT_EQ(fake_.init_calls, 1);
  EXPECT_EQ(fake_.set_device_calls, 1);
  // HIP's current device is per thread: another thread sets it again.
  std::thread other([&] { EXPECT_TRUE(driver->mem_alloc(16).ok()); });
  other.join();
  EXPECT_EQ(fake_.set_device_calls, 2);
}

TEST_F(HipDriverOnFakeRuntime, LimitsFromDeviceReadHipAttributeIds) {
  auto driver = make_driver();
  Result<DeviceLimits> limits = limits_from_device(*driver);
  ASSERT_TRUE(limits.ok()) << limits.error().message;
  EXPECT_TRUE(limits->from_device);
  EXPECT_EQ(limits->sm, 94u);
  EXPECT_EQ(limits->max_threads_per_block, 1024u);
  EXPECT_EQ(limits->default_shared_per_block, 64 * k_kib);
  EXPECT_EQ(limits->optin_shared_per_block, 64 * k_kib);
  EXPECT_EQ(limits->shared_per_sm, 64 * k_kib);
  EXPECT_EQ(limits->sm_count, 304u);
  EXPECT_EQ(limits->max_resident_blocks_per_sm, 32u);
  EXPECT_EQ(limits->max_cluster_size, 0u);  // CLUSTER_LAUNCH is 0 on HIP
  for (const std::string& call : fake_.calls) {
    // Only HIP ids reach the runtime (the fake rejects any other).
    EXPECT_EQ(call.find("hipDeviceGetAttribute("), 0u) << call;
  }
  EXPECT_EQ(fake_.calls.size(), 8u);
}

TEST_F(HipDriverOnFakeRuntime, OlderRuntimeAnswersFromFallbackAttributes) {
  // ROCm 5's runtime marks the opt-in, per-CU and blocks-per-CU attributes
  // "Cuda only": without them the plain maximum and the AMD-specific figure serve.
  fake_.device_attributes.erase(k_hip_shared_per_block_optin);
  fake_.device_attributes.erase(k_hip_shared_per_cu);
  fake_.device_attributes.erase(k_hip_max_blocks_per_cu);
  fake_.device_attributes[k_hip_amd_max_shared_per_cu] = 160 * k_kib;
  auto driver = make_driver();
  EXPECT_EQ(*driver->device_attribute(ids::k_device_max_shared_memory_per_block_optin), int(64 * k_kib));
  EXPECT_EQ(*driver->device_attribute(ids::k_device_max_shared_memory_per_multiprocessor), int(160 * k_kib));
  EXPECT_EQ(*driver->device_attribute(ids::k_device_max_blocks_per_multiprocessor), 0);  // unknown
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"hipDeviceGetAttribute(75, 0)", "hipDeviceGetAttribute(74, 0)",
                                                   "hipDeviceGetAttribute(76, 0)", "hipDeviceGetAttribute(10002, 0)",
                                                   "hipDeviceGetAttribute(25, 0)"}));
}

TEST_F(HipDriverOnFakeRuntime, AttributeWithoutFallbackReportsTheRuntimeError) {
  fake_.device_attributes.erase(k_hip_cu_count);
  auto driver = make_driver();
  Result<int> count = driver->device_attribute(ids::k_device_multiprocessor_count);
  ASSERT_TRUE(fails_exactly(
      count, ErrorCode::invalid_argument,
      "hipDeviceGetAttribute: hipErrorInvalidValue (fake error) (hipDeviceAttributeMultiprocessorCount for "
      "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)"));
}

TEST_F(HipDriverOnFakeRuntime, AttributesWithoutTranslationAreUnimplemented) {
  auto driver = make_driver();
  for (int attribute : {ids::k_device_cooperative_launch, ids::k_device_max_oversized_shared_memory_per_block,
                        ids::k_device_reserved_shared_memory_per_block}) {
    Result<int> value = driver->device_attribute(attribute);
    ASSERT_TRUE(fails_with(value, ErrorCode::unimplemented));
  }
  EXPECT_EQ(*driver->device_attribute(ids::k_device_cluster_launch), 0);
  EXPECT_TRUE(fake_.calls.empty());
}

TEST_F(HipDriverOnFakeRuntime, DynamicSharedMemoryPlanSetsHipAttributeThenLaunches) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  LaunchConfig config = shape({8}, {128});
  config.dynamic_shared_bytes = 100 * k_kib;
  KernelArgs args{KernelArg::pointer(0x7000), KernelArg::i32(3)};
  const LaunchArgs packed{nullptr, args.bytes()};
  ASSERT_TRUE(apply_and_launch(*driver, function, plan_of(config), packed).ok());
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{
                             "hipFuncSetAttribute(0x1001, 8, 102400)",
                             "hipModuleLaunchKernel(0x1001, grid (8,1,1), block (128,1,1), shared 102400, "
                             "stream null, extra 12 bytes)",
                         }));
}

TEST_F(HipDriverOnFakeRuntime, ParamsArePassedAsKernelParams) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  KernelArgs args{KernelArg::f32(1.5f)};
  ASSERT_TRUE(
      driver->launch(function, plan_of(shape({2, 3}, {64})), LaunchArgs{args.params(), {}}, k_default_stream).ok());
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"hipModuleLaunchKernel(0x1001, grid (2,3,1), block (64,1,1), "
                                                   "shared 0, stream null, params)"}));
}

TEST_F(HipDriverOnFakeRuntime, SameImageLoadsOnce) {
  auto driver = make_driver();
  Result<ModuleHandle> first = driver->load_module("code object");
  Result<ModuleHandle> second = driver->load_module("code object");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"hipModuleLoadData(code object)"}));
}

TEST_F(HipDriverOnFakeRuntime, CooperativePlanUsesTheCooperativeLaunch) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  LaunchConfig config = shape({4}, {128});
  config.cooperative = true;
  KernelArgs args{KernelArg::i32(1)};
  ASSERT_TRUE(driver->launch(function, plan_of(config), LaunchArgs{args.params(), {}}, k_default_stream).ok());
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"hipModuleLaunchCooperativeKernel(0x1001, grid (4,1,1), block "
                                                   "(128,1,1), shared 0, stream null, params)"}));

  // That call has no packed form.
  Status packed = driver->launch(function, plan_of(config), LaunchArgs{nullptr, args.bytes()}, k_default_stream);
  ASSERT_TRUE(fails_with(packed, ErrorCode::invalid_argument, "LaunchArgs::params"));
  EXPECT_EQ(fake_.calls.size(), 1u);
}

TEST_F(HipDriverOnFakeRuntime, CooperativeWithoutTheEntryPointIsUnimplemented) {
  fake_.absent.insert("hipModuleLaunchCooperativeKernel");
  auto driver = make_driver();
  ASSERT_TRUE(driver->available().ok());  // optional: the rest still works
  const FunctionHandle function = load_kernel(*driver);
  LaunchConfig config = shape({4}, {128});
  config.cooperative = true;
  Status status = driver->launch(function, plan_of(config), {}, k_default_stream);
  ASSERT_TRUE(fails_with(status, ErrorCode::unimplemented, "lacks hipModuleLaunchCooperativeKernel"));
  EXPECT_TRUE(fake_.calls.empty());
}

TEST_F(HipDriverOnFakeRuntime, UnsupportedPlansAreRefusedBeforeAnyLaunch) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  Status cluster = driver->launch(function, plan_of(shape({8}, {128}, {2})), {}, k_default_stream);
  ASSERT_TRUE(fails_with(cluster, ErrorCode::unimplemented));

  // The oversized mode fails at its function attribute, the first call.
  LaunchConfig config = shape({8}, {128});
  config.dynamic_shared_bytes = 300 * k_kib;
  Status oversized = apply_and_launch(*driver, function, plan_of(config, "cuda:107"), {});
  ASSERT_TRUE(fails_exactly(
      oversized, ErrorCode::unimplemented,
      "the oversized shared memory mode is not available on HIP (CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE = 3)"));
  EXPECT_TRUE(fake_.calls.empty());
}

TEST_F(HipDriverOnFakeRuntime, FunctionAttributeIdsMapToHip) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  EXPECT_EQ(*driver->get_function_attribute(function, ids::k_func_max_threads_per_block), 256);
  EXPECT_EQ(*driver->get_function_attribute(function, ids::k_func_max_dynamic_shared_size_bytes), int(64 * k_kib));
  Result<int> non_portable = driver->get_function_attribute(function, ids::k_func_non_portable_cluster_size_allowed);
  ASSERT_TRUE(fails_with(non_portable, ErrorCode::unimplemented));
  EXPECT_EQ(driver->set_function_attribute(function, ids::k_func_non_portable_cluster_size_allowed, 1).error().code,
            ErrorCode::unimplemented);
  EXPECT_EQ(fake_.calls,
            (std::vector<std::string>{"hipFuncGetAttribute(0, 0x1001)", "hipFuncGetAttribute(8, 0x1001)"}));
}

TEST_F(HipDriverOnFakeRuntime, OlderRuntimeRejectingModuleFunctionsFallsBackToTheLdsLimit) {
  fake_.func_set_result = k_hip_error_invalid_device_function;
  fake_.max_dynamic_shared = 60 * k_kib;
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  EXPECT_TRUE(driver->set_function_attribute(function, ids::k_func_max_dynamic_shared_size_bytes, 60 * k_kib).ok());
  Status over = driver->set_function_attribute(function, ids::k_func_max_dynamic_shared_size_bytes, 100 * k_kib);
  ASSERT_TRUE(fails_with(over, ErrorCode::invalid_argument, "out of resource: shared memory: 102400 bytes"));
  EXPECT_NE(over.error().message.find("61440"), std::string::npos) << over.error().message;
}

TEST_F(HipDriverOnFakeRuntime, PriorityGoesToTheStream) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  LaunchConfig config = shape({1}, {32});
  config.stream_priority = -1;
  const LaunchPlan plan = plan_of(config);
  // On the default stream: one blocking stand-in of that priority, reused.
  ASSERT_TRUE(driver->launch(function, plan, {}, k_default_stream).ok());
  ASSERT_TRUE(driver->launch(function, plan, {}, k_default_stream).ok());
  // On the caller's stream: the stream's own priority.
  Result<StreamHandle> stream = driver->stream_create(-1);
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(driver->launch(function, plan, {}, *stream).ok());
  driver.reset();
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{
                             "hipStreamCreateWithPriority(0, -1) = 0x1002",
                             "hipModuleLaunchKernel(0x1001, grid (1,1,1), block (32,1,1), shared 0, stream 0x1002)",
                             "hipModuleLaunchKernel(0x1001, grid (1,1,1), block (32,1,1), shared 0, stream 0x1002)",
                             "hipStreamCreateWithPriority(1, -1) = 0x1003",
                             "hipModuleLaunchKernel(0x1001, grid (1,1,1), block (32,1,1), shared 0, stream 0x1003)",
                             "hipStreamDestroy(0x1002)",
                         }));
}

TEST_F(HipDriverOnFakeRuntime, MemoryStreamsEventsAndOccupancy) {
  auto driver = make_driver();
  const FunctionHandle function = load_kernel(*driver);
  EXPECT_EQ(*driver->max_active_blocks_per_sm(function, 256, 1024), 3);
  Result<DevicePtr> buffer = driver->mem_alloc(64);
  ASSERT_TRUE(buffer.ok());
  std::byte bytes[16]{};
  EXPECT_TRUE(driver->copy_to_device(*buffer, bytes).ok());
  EXPECT_TRUE(driver->copy_to_host(bytes, *buffer).ok());
  Result<EventHandle> start = driver->event_create();
  ASSERT_TRUE(start.ok());
  EXPECT_TRUE(driver->event_record(*start, k_default_stream).ok());
  EXPECT_TRUE(driver->event_synchronize(*start).ok());
  EXPECT_FLOAT_EQ(*driver->event_elapsed_ms(*start, *start), 1.5f);
  EXPECT_TRUE(driver->event_destroy(*start).ok());
  EXPECT_TRUE(driver->synchronize().ok());
  EXPECT_TRUE(driver->mem_free(*buffer).ok());
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{
                             "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(0x1001, 256, 1024)",
                             "hipMalloc(64)",
                             "hipMemcpyHtoD(0x1002, 16)",
                             "hipMemcpyDtoH(0x1002, 16)",
                             "hipEventCreate() = 0x1003",
                             "hipEventRecord(0x1003, null)",
                             "hipEventSynchronize(0x1003)",
                             "hipEventDestroy(0x1003)",
                             "hipDeviceSynchronize()",
                             "hipFree(0x1002)",
                         }));
}

TEST_F(HipDriverOnFakeRuntime, ErrorsCarryHipNamesAndCodes) {
  fake_.malloc_result = k_hip_error_out_of_memory;
  auto driver = make_driver();
  Result<DevicePtr> buffer = driver->mem_alloc(64);
  ASSERT_TRUE(fails_exactly(buffer, ErrorCode::resource_exhausted,
                            "hipMalloc: hipErrorOutOfMemory (out of memory) (64 bytes)"));
}

TEST_F(HipDriverOnFakeRuntime, InitFailureIsNoUsableDevice) {
  fake_.init_result = k_hip_error_no_device;
  auto driver = make_driver();
  for (int i = 0; i < 2; ++i) {
    Status status = driver->available();
    ASSERT_TRUE(fails_exactly(status, ErrorCode::failed_precondition,
                              "no usable HIP device: hipInit: hipErrorNoDevice (fake error)"));
  }
  EXPECT_EQ(fake_.init_calls, 1);
}

TEST_F(HipDriverOnFakeRuntime, DeviceOrdinalBeyondTheCountIsFailedPrecondition) {
  fake_.device_count = 1;
  HipDriver driver(
      1, [](const char* symbol) -> void* { return fake_symbols().at(symbol); }, "fake libamdhip64");
  Status status = driver.available();
  ASSERT_TRUE(fails_exactly(status, ErrorCode::failed_precondition, "no HIP device 1 on this host (1 found)"));
}

TEST_F(HipDriverOnFakeRuntime, MissingEntryPointIsNamed) {
  fake_.absent.insert("hipModuleLaunchKernel");
  fake_.absent.insert("hipGetErrorName");  // optional: not named
  auto driver = make_driver();
  Status status = driver->available();
  ASSERT_TRUE(fails_exactly(status, ErrorCode::failed_precondition,
                            "the HIP runtime in fake libamdhip64 lacks hipModuleLaunchKernel"));
}

}  // namespace
}  // namespace kjit
