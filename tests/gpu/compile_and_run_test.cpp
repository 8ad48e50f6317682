// On a machine with an NVIDIA GPU: compile through a real kjitd for the
// device's own architecture, load the cubin with the driver, run it, and check
// that what kjit read from the cubin is what the driver reports.
#include <gtest/gtest.h>

#include <vector>

#include "device_test.h"
#include "kjit/client.h"
#include "kjit/module.h"
#include "support/cuda_kernels.h"

namespace kjit::test {
namespace {

#define CU_ASSERT(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call

class DeviceTest : public DeviceDaemonTest {
 protected:
  CompileResult compile(const char* source) {
    CompileRequest request;
    request.input = source;
    request.target = target();
    auto result = client().compile(request);
    EXPECT_TRUE(result) << result.error().message << "\n" << result.error().log;
    return result ? std::move(result.value()) : CompileResult{};
  }
};

// Device copies of vector_add's inputs and room for its output, freed when
// this goes.
struct VectorAddBuffers {
  CUdeviceptr a = 0, b = 0, c = 0;
  size_t bytes = 0;

  // The first call that fails, or CUDA_SUCCESS.
  CUresult upload(const std::vector<float>& host_a, const std::vector<float>& host_b) {
    bytes = host_a.size() * sizeof(float);
    for (CUdeviceptr* buffer : {&a, &b, &c})
      if (CUresult r = driver().mem_alloc(buffer, bytes); r != CUDA_SUCCESS) return r;
    if (CUresult r = driver().memcpy_htod(a, host_a.data(), bytes); r != CUDA_SUCCESS) return r;
    return driver().memcpy_htod(b, host_b.data(), bytes);
  }
  ~VectorAddBuffers() {
    for (CUdeviceptr buffer : {a, b, c})
      if (buffer) driver().mem_free(buffer);
  }
};

// Loads `image` (a cubin or a fatbin) with cuModuleLoadData, runs its
// vector_add over n elements and checks every sum.
void load_and_run_vector_add(const std::string& image, int n) {
  CUmodule module = nullptr;
  CU_ASSERT(driver().module_load_data(&module, image.data()));
  CUfunction function = nullptr;
  CU_ASSERT(driver().module_get_function(&function, module, "vector_add"));
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * static_cast<float>(i);
  }
  VectorAddBuffers d;
  CU_ASSERT(d.upload(a, b));
  void* args[] = {&d.a, &d.b, &d.c, &n};
  CU_ASSERT(driver().launch_kernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU_ASSERT(driver().ctx_synchronize());
  CU_ASSERT(driver().memcpy_dtoh(c.data(), d.c, d.bytes));
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 3.0f * static_cast<float>(i)) << "at " << i;
  driver().module_unload(module);
}

TEST_F(DeviceTest, VectorAddRunsAndAddsCorrectly) {
  CompileResult result = compile(k_vector_add);
  ASSERT_FALSE(result.artifact.empty());
  load_and_run_vector_add(result.artifact, 1 << 20);
}

// A fatbin for an older architecture, the device's and a newer one: the
// driver loads it with cuModuleLoadData and runs the device's part.
TEST_F(DeviceTest, AFatbinForSeveralTargetsLoadsAndRuns) {
  CompileRequest request;
  request.input = k_vector_add;
  request.targets = {"cuda:80", target(), "cuda:107"};
  if (target() == "cuda:80" || target() == "cuda:107") request.targets = {"cuda:75", target()};
  request.artifact = ArtifactKind::fatbin;
  Result<CompileResult> result = client().compile(request);
  ASSERT_TRUE(result) << result.error().message << "\n" << result.error().log;
  ASSERT_EQ(result->artifact_kind, ArtifactKind::fatbin);
  load_and_run_vector_add(result->artifact, 1 << 16);
}

TEST_F(DeviceTest, ClientSideModuleLaunchesWithThePlan) {
  CompileResult result = compile(k_vector_add);
  auto module = Module::load(result);
  ASSERT_TRUE(module) << module.error().message;
  auto kernel = module->kernel("vector_add");
  ASSERT_TRUE(kernel) << kernel.error().message;
  int n = 4096;
  std::vector<float> a(n, 1.5f), b(n, 2.0f), c(n, 0.0f);
  VectorAddBuffers d;
  CU_ASSERT(d.upload(a, b));
  KernelArgs args{KernelArg::pointer(d.a), KernelArg::pointer(d.b), KernelArg::pointer(d.c), KernelArg::i32(n)};
  LaunchConfig config;
  config.grid = {static_cast<uint32_t>(n / 256), 1, 1};
  config.block = {256, 1, 1};
  auto plan = kernel->launch(config, args);
  ASSERT_TRUE(plan) << plan.error().message;
  CU_ASSERT(driver().ctx_synchronize());
  CU_ASSERT(driver().memcpy_dtoh(c.data(), d.c, d.bytes));
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 3.5f) << i;
}

TEST_F(DeviceTest, ReportedMetadataMatchesTheDriver) {
  struct Case {
    const char* source;
    const char* kernel;
  };
  for (Case c : {Case{k_vector_add, "vector_add"}, Case{k_launch_bounds, "bounded"}, Case{k_shared_16k, "tiled"}}) {
    CompileResult result = compile(c.source);
    ASSERT_EQ(result.kernels.size(), 1u);
    const KernelInfo& info = result.kernels[0];
    CUmodule module = nullptr;
    CU_ASSERT(driver().module_load_data(&module, result.artifact.data()));
    CUfunction function = nullptr;
    CU_ASSERT(driver().module_get_function(&function, module, c.kernel));
    int regs = 0, shared = 0, max_threads = 0, local = 0;
    driver().func_get_attribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, function);
    driver().func_get_attribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
    driver().func_get_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
    driver().func_get_attribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function);
    // Printed so a device run settles which shared-memory figure the driver
    // counts (on sm_90 and newer the cubin's section is 1 KiB larger than
    // what ptxas reports; no device has settled which one it is yet).
    std::printf(
        "%s on %s: driver regs=%d shared=%d max_threads=%d local=%d | kjit regs=%u static_shared=%u "
        "section=%u max_threads=%u local=%u\n",
        c.kernel, target().c_str(), regs, shared, max_threads, local, info.registers, info.static_shared_bytes,
        info.shared_section_bytes, info.max_threads_per_block, info.local_bytes);
    EXPECT_EQ(static_cast<uint32_t>(regs), info.registers) << c.kernel;
    EXPECT_TRUE(static_cast<uint32_t>(shared) == info.static_shared_bytes ||
                static_cast<uint32_t>(shared) == info.shared_section_bytes)
        << c.kernel << ": driver says " << shared;
    if (info.max_threads_per_block) {
      EXPECT_EQ(static_cast<uint32_t>(max_threads), info.max_threads_per_block);
    }
    EXPECT_EQ(static_cast<uint32_t>(local), info.local_bytes) << c.kernel;
    driver().module_unload(module);
  }
}

}  // namespace
}  // namespace kjit::test
