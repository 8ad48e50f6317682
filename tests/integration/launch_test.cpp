// PlanLaunch and Launch through a real kjitd (no GPU here: Launch must say
// so), and `kjit plan` / `kjit launch` exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kjit/client.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/fails_with.h"
#include "support/llvm_kernels.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_dynamic_smem = R"(
extern "C" __global__ void __launch_bounds__(256) dyn(float* out) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = buf[255 - threadIdx.x];
}
)";

class LaunchTest : public ToolkitDaemonTest {
 protected:
  static void SetUpTestSuite() { start_daemon(); }
  static KernelRef ref(const char* source, const std::string& target, const std::string& kernel) {
    KernelRef r;
    r.compile.input = source;
    r.compile.target = target;
    r.kernel = kernel;
    return r;
  }
  static const PlannedAttribute* find(const std::vector<PlannedAttribute>& list, const std::string& name) {
    for (const PlannedAttribute& a : list)
      if (a.name == name) return &a;
    return nullptr;
  }
};

TEST_F(LaunchTest, PlanOver48KiBSetsTheOptInAttributeFromTheCompiledKernel) {
  LaunchConfig config;
  config.grid = {4, 1, 1};
  config.block = {256, 1, 1};
  config.dynamic_shared_bytes = 100 * 1024;
  auto plan = client().plan_launch(ref(k_dynamic_smem, "cuda:90", "dyn"), config);
  ASSERT_TRUE(plan) << plan.error().message;
  const PlannedAttribute* max_dynamic = find(plan->function_attributes, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES");
  ASSERT_NE(max_dynamic, nullptr);
  EXPECT_EQ(max_dynamic->values, std::vector<int64_t>{100 * 1024});
  EXPECT_EQ(plan->kernel_info.max_threads_per_block, 256u);
  EXPECT_FALSE(plan->limits_from_device);
  EXPECT_FALSE(plan->key.empty());
}

TEST_F(LaunchTest, ImpossiblePlanIsInvalidArgumentWithThePlannersMessage) {
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {512, 1, 1};  // over __launch_bounds__(256)
  auto plan = client().plan_launch(ref(k_dynamic_smem, "cuda:90", "dyn"), config);
  ASSERT_TRUE(fails_with(plan, ErrorCode::invalid_argument, "256"));

  config.block = {256, 1, 1};
  config.dynamic_shared_bytes = 230 * 1024;
  plan = client().plan_launch(ref(k_dynamic_smem, "cuda:90", "dyn"), config);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("out of resource: shared memory"), std::string::npos) << plan.error().message;
}

TEST_F(LaunchTest, Sm107PlanRestsOnPtxAndGetsTheOversizedModeWithSpread) {
  // A host whose one toolkit (CUDA 13.0) cannot build sm_107.
  TestDaemon daemon(with_the_system_toolkit_only());
  LaunchConfig config;
  config.grid = {8, 1, 1};
  config.block = {128, 1, 1};
  config.dynamic_shared_bytes = 300 * 1024;
  KernelRef r;
  r.compile.input_kind = InputKind::llvm_ir;
  r.compile.input = k_llvm_vadd;
  r.compile.target = "cuda:107";
  r.compile.allow_ptx_fallback = true;
  r.kernel = "vadd";
  auto plan = Client(daemon.socket_path()).plan_launch(r, config);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->rests_on_ptx);
  EXPECT_TRUE(plan->oversized_shared_memory);
  const PlannedAttribute* mode = find(plan->launch_attributes, "CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE");
  ASSERT_NE(mode, nullptr);
  EXPECT_EQ(mode->values, std::vector<int64_t>{3});
  const PlannedAttribute* policy = find(plan->launch_attributes, "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->values, std::vector<int64_t>{1});
}

TEST_F(LaunchTest, UnknownKernelIsNotFoundListingTheModulesKernels) {
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {32, 1, 1};
  auto plan = client().plan_launch(ref(k_vector_add, "cuda:90", "nope"), config);
  ASSERT_TRUE(fails_with(plan, ErrorCode::not_found, "vector_add"));
}

TEST_F(LaunchTest, LaunchWithoutADriverIsFailedPrecondition) {
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {256, 1, 1};
  LaunchValue buffer;
  buffer.kind = LaunchValue::Kind::buffer;
  buffer.buffer.size = 1024;
  buffer.buffer.return_contents = true;
  auto result = client().launch(ref(k_dynamic_smem, "cuda:90", "dyn"), config, {buffer});
  ASSERT_TRUE(fails_with(result, ErrorCode::failed_precondition, "no CUDA driver on this host"));
}

// gRPC's own receive limit follows every configured request limit: a launch
// within max_launch_bytes (256 MiB by default) but larger than a compile
// request may be reaches kjitd's answer, not gRPC's refusal of the message.
TEST_F(LaunchTest, ALaunchWithinItsLimitIsNotRefusedByTheTransport) {
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {256, 1, 1};
  LaunchValue buffer;
  buffer.kind = LaunchValue::Kind::buffer;
  buffer.buffer.data = std::string(100u << 20, '\x5a');
  buffer.buffer.size = buffer.buffer.data.size();
  auto result = client().launch(ref(k_dynamic_smem, "cuda:90", "dyn"), config, {buffer});
  if (!result) {
    EXPECT_NE(result.error().code, ErrorCode::resource_exhausted) << result.error().message;
    EXPECT_EQ(result.error().message.find("larger than max"), std::string::npos) << result.error().message;
  }
}

TEST_F(LaunchTest, PlanCliPrintsAttributesAndExitsOneOnAnImpossibleLaunch) {
  const fs::path file = fs::path(daemon_->dir()) / "dyn.cu";
  std::ofstream(file) << k_dynamic_smem;
  auto ok = run_command({kjit_cli_path(), "plan", file.string(), "--target", "cuda:90", "--kernel", "dyn", "--grid",
                         "4", "--block", "256", "--dynamic-smem", "102400", "--json", "--socket", daemon_->socket_path()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  auto json = nlohmann::json::parse(ok.out);
  EXPECT_EQ(json["function_attributes"][0]["name"], "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES");
  EXPECT_EQ(json["function_attributes"][0]["value"], 102400);
  auto bad = run_command({kjit_cli_path(), "plan", file.string(), "--target", "cuda:90", "--kernel", "dyn", "--grid",
                          "4", "--block", "256", "--dynamic-smem", "240000", "--socket", daemon_->socket_path()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("out of resource: shared memory"), std::string::npos) << bad.err;
  auto launch = run_command({kjit_cli_path(), "launch", file.string(), "--kernel", "dyn", "--block", "256", "--arg",
                             "zeros:1024", "--out", "0", "--socket", daemon_->socket_path()});
  EXPECT_EQ(launch.exit_code, 1);
  EXPECT_NE(launch.err.find("no CUDA driver"), std::string::npos) << launch.err;
  auto usage = run_command({kjit_cli_path(), "launch", file.string(), "--kernel", "dyn", "--arg", "q32:1", "--socket",
                            daemon_->socket_path()});
  EXPECT_EQ(usage.exit_code, 2);
}

}  // namespace
}  // namespace kjit::test
