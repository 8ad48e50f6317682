// The cubin reader on cubins that NVRTC + nvJitLink build while the test
// runs, checked against the kernels' source and against what ptxas itself
// reported (-Xptxas=-v) while assembling them.
#include "metadata/cubin_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>

#include "cuda_compile.h"

namespace kjit {
namespace {

using testing::CompiledCubin;
using testing::CudaCompileOptions;

constexpr const char* k_vector_add = R"(
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
})";

// 16 KiB plus 12 bytes of static shared memory.
constexpr const char* k_shared_16k = R"(
__global__ void shared_16k(float* p) {
  __shared__ float tile[4096];
  __shared__ int flags[3];
  tile[threadIdx.x] = p[threadIdx.x];
  flags[threadIdx.x % 3] = 1;
  __syncthreads();
  p[threadIdx.x] = tile[4095 - threadIdx.x] + flags[1];
})";

// Hand-written PTX for directives CUDA C++ has no direct spelling of.
constexpr const char* k_directives_ptx = R"(
.version 9.0
.target sm_90
.address_size 64

.visible .entry required_64x2(.param .u64 p)
.reqntid 64, 2, 1
{
  ret;
}
.visible .entry box_16x8x2(.param .u64 p)
.maxntid 16, 8, 2
{
  ret;
}
.visible .entry maxnreg_32(.param .u64 p)
.maxnreg 32
{
  ret;
}
.visible .entry cluster_4x2(.param .u64 p)
.reqnctapercluster 4, 2, 1
{
  ret;
}
.visible .entry rank_4(.param .u64 p)
.maxclusterrank 4
{
  ret;
}
)";

struct Built {
  CompiledCubin compiled;
  std::optional<CubinInfo> info;
  std::string error;  // compile or read failure
};

Built read_back(CompiledCubin compiled) {
  Built built{std::move(compiled), std::nullopt, {}};
  if (!built.compiled.ok) {
    built.error = built.compiled.error;
    return built;
  }
  auto result = read_cubin(built.compiled.cubin);
  if (result.ok())
    built.info = std::move(result).value();
  else
    built.error = result.error().message;
  return built;
}

Built build(std::string_view source, std::string_view arch, const CudaCompileOptions& options = {}) {
  return read_back(testing::compile_cuda(source, arch, options));
}

const KernelInfo* find_kernel(const CubinInfo& info, std::string_view lowered_name) {
  for (const auto& kernel : info.kernels)
    if (kernel.lowered_name == lowered_name) return &kernel;
  return nullptr;
}

uint32_t sm_number_of(const std::string& arch) {  // "sm_90a" -> 90
  return static_cast<uint32_t>(std::stoul(arch.substr(3)));
}

// Runs per architecture: Turing, Ada, Hopper, Blackwell, consumer Blackwell.
class CubinReaderOnArch : public ::testing::TestWithParam<std::string> {};

TEST_P(CubinReaderOnArch, VectorAddMatchesPtxasReport) {
  Built built = build(k_vector_add, GetParam());
  ASSERT_TRUE(built.info) << built.error;
  const CubinInfo& info = *built.info;
  EXPECT_EQ(info.sm, sm_number_of(GetParam()));
  EXPECT_FALSE(info.arch_specific);
  ASSERT_EQ(info.kernels.size(), 1u);
  const KernelInfo& kernel = info.kernels[0];
  EXPECT_EQ(kernel.lowered_name, "vector_add");
  EXPECT_EQ(kernel.name, "vector_add");
  ASSERT_TRUE(built.compiled.ptxas.count("vector_add")) << built.compiled.link_log;
  const auto& report = built.compiled.ptxas.at("vector_add");
  EXPECT_GT(kernel.registers, 0u);
  EXPECT_EQ(kernel.registers, report.registers);
  EXPECT_EQ(kernel.local_bytes, report.stack_bytes);
  EXPECT_EQ(kernel.static_shared_bytes, 0u);
  EXPECT_EQ(kernel.param_bytes, 8u + 8u + 8u + 4u);  // three pointers and an int
  EXPECT_EQ(kernel.max_threads_per_block, 0u);
  EXPECT_FALSE(kernel.required_threads.is_set());
  EXPECT_FALSE(kernel.cluster_dims.is_set());
  EXPECT_EQ(kernel.max_registers, 0u);
}

TEST_P(CubinReaderOnArch, StaticSharedMemoryEqualsPtxasFigure) {
  Built built = build(k_shared_16k, GetParam());
  ASSERT_TRUE(built.info) << built.error;
  const KernelInfo* kernel = find_kernel(*built.info, "_Z10shared_16kPf");
  ASSERT_NE(kernel, nullptr);
  const auto& report = built.compiled.ptxas.at("_Z10shared_16kPf");
  EXPECT_GE(kernel->static_shared_bytes, 16384u);
  EXPECT_EQ(kernel->static_shared_bytes, report.shared_bytes) << built.compiled.link_log;
  EXPECT_EQ(kernel->registers, report.registers);
}

TEST_P(CubinReaderOnArch, SharedSectionIncludesReservedMemoryFromSm90On) {
  Built built = build(k_shared_16k, GetParam());
  ASSERT_TRUE(built.info) << built.error;
  const KernelInfo* kernel = find_kernel(*built.info, "_Z10shared_16kPf");
  ASSERT_NE(kernel, nullptr);
  const uint32_t expected_reserved = sm_number_of(GetParam()) >= 90 ? 1024 : 0;
  EXPECT_EQ(built.info->reserved_shared_bytes, expected_reserved);
  EXPECT_EQ(kernel->shared_section_bytes, kernel->static_shared_bytes + expected_reserved);
}

INSTANTIATE_TEST_SUITE_P(Arch, CubinReaderOnArch, ::testing::Values("sm_75", "sm_89", "sm_90", "sm_100", "sm_120"),
                         [](const auto& info) { return info.param; });

TEST(CubinReader, TemplateInstantiationHasLoweredAndSourceNames) {
  CudaCompileOptions options;
  options.name_expressions = {"scale<float>", "scale<double>"};
  Built built = build(R"(
template <typename T> __global__ void scale(T* p, T factor) { p[threadIdx.x] *= factor; }
)",
                      "sm_90", options);
  ASSERT_TRUE(built.info) << built.error;
  const std::string lowered = built.compiled.lowered_names.at("scale<float>");
  EXPECT_EQ(lowered, "_Z5scaleIfEvPT_S0_");
  const KernelInfo* kernel = find_kernel(*built.info, lowered);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->name, "scale<float>");
  const KernelInfo* twin = find_kernel(*built.info, built.compiled.lowered_names.at("scale<double>"));
  ASSERT_NE(twin, nullptr);
  EXPECT_EQ(twin->name, "scale<double>");
  EXPECT_EQ(twin->param_bytes, 16u);
}

TEST(CubinReader, LaunchBoundsReadBackAsMaxThreads) {
  Built built = build(R"(
__global__ void __launch_bounds__(256) bounded(float* p) { p[threadIdx.x] *= 2; }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  ASSERT_EQ(built.info->kernels.size(), 1u);
  EXPECT_EQ(built.info->kernels[0].max_threads_per_block, 256u);
  EXPECT_EQ(built.info->kernels[0].max_registers, 0u);  // 65536 / 256 is no cap
}

TEST(CubinReader, LaunchBoundsMinBlocksBecomeARegisterCap) {
  // 8 blocks of 128 threads in 64K registers leaves 64 registers a thread.
  Built built = build(R"(
__global__ void __launch_bounds__(128, 8) occupied(float* p) { p[threadIdx.x] *= 2; }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  const KernelInfo& kernel = built.info->kernels.at(0);
  EXPECT_EQ(kernel.max_threads_per_block, 128u);
  EXPECT_EQ(kernel.max_registers, 64u);
  EXPECT_LE(kernel.registers, 64u);
}

TEST(CubinReader, LaunchBoundsWithClusterLimitKeepsMaxThreads) {
  Built built = build(R"(
__global__ void __launch_bounds__(128, 2, 4) clustered(float* p) { p[threadIdx.x] *= 2; }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  const KernelInfo& kernel = built.info->kernels.at(0);
  EXPECT_EQ(kernel.max_threads_per_block, 128u);
  EXPECT_EQ(kernel.max_registers, 0u);         // 65536 / (128 * 2) is above 255
  EXPECT_FALSE(kernel.cluster_dims.is_set());  // a limit, not a required shape
}

TEST(CubinReader, ClusterDimsReadBack) {
  Built built = build(R"(
__global__ void __cluster_dims__(2, 1, 1) pair(float* p) { p[threadIdx.x] += 1; }
__global__ void __cluster_dims__(2, 3, 4) box(float* p) { p[threadIdx.x] += 1; }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  ASSERT_NE(find_kernel(*built.info, "_Z4pairPf"), nullptr);
  ASSERT_NE(find_kernel(*built.info, "_Z3boxPf"), nullptr);
  EXPECT_EQ(find_kernel(*built.info, "_Z4pairPf")->cluster_dims, (Dim3{2, 1, 1}));
  EXPECT_EQ(find_kernel(*built.info, "_Z3boxPf")->cluster_dims, (Dim3{2, 3, 4}));
}

// The kernel `name` of k_directives_ptx as read back from its sm_90 cubin;
// when it is not there, a KernelInfo with nothing set, failing the test.
KernelInfo directives_kernel(const std::string& name) {
  Built built = read_back(testing::link_ptx(k_directives_ptx, "sm_90"));
  EXPECT_TRUE(built.info) << built.error;
  const KernelInfo* kernel = built.info ? find_kernel(*built.info, name) : nullptr;
  EXPECT_NE(kernel, nullptr) << name;
  return kernel ? *kernel : KernelInfo{};
}

TEST(CubinReader, PtxReqntidReadsBackAsRequiredThreads) {
  EXPECT_EQ(directives_kernel("required_64x2").required_threads, (Dim3{64, 2, 1}));
}

TEST(CubinReader, PtxMaxntidBoxReadsBackAsItsVolume) {
  const KernelInfo box = directives_kernel("box_16x8x2");
  EXPECT_EQ(box.max_threads_per_block, 16u * 8u * 2u);
  EXPECT_FALSE(box.required_threads.is_set());
}

TEST(CubinReader, PtxMaxnregReadsBackAsMaxRegisters) {
  EXPECT_EQ(directives_kernel("maxnreg_32").max_registers, 32u);
}

TEST(CubinReader, PtxReqnctaperclusterReadsBackAsClusterDims) {
  EXPECT_EQ(directives_kernel("cluster_4x2").cluster_dims, (Dim3{4, 2, 1}));
}

TEST(CubinReader, PtxMaxclusterrankReadsBackAsMaxClusterRank) {
  const KernelInfo rank = directives_kernel("rank_4");
  EXPECT_EQ(rank.max_cluster_rank, 4u);
  EXPECT_FALSE(rank.cluster_dims.is_set());  // a limit, not a shape
  EXPECT_EQ(directives_kernel("cluster_4x2").max_cluster_rank, 0u);
}

// Needs more than 32 registers when unconstrained.
constexpr const char* k_register_hungry = R"(
__global__ void hungry(const double* in, double* out) {
  double acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = in[threadIdx.x + i * 32];
  double sum = 0;
  for (int i = 0; i < 24; ++i) sum += acc[i] * acc[(i * 7) % 24];
  out[threadIdx.x] = sum;
})";

TEST(CubinReader, MaxrregcountOptionCapsRegisters) {
  Built free_build = build(k_register_hungry, "sm_90");
  ASSERT_TRUE(free_build.info) << free_build.error;
  ASSERT_GT(free_build.info->kernels.at(0).registers, 32u) << "kernel too small to test a cap";

  CudaCompileOptions options;
  options.link_options = {"-maxrregcount=32"};
  Built capped = build(k_register_hungry, "sm_90", options);
  ASSERT_TRUE(capped.info) << capped.error;
  const KernelInfo& kernel = capped.info->kernels.at(0);
  EXPECT_EQ(kernel.max_registers, 32u);
  EXPECT_LE(kernel.registers, 32u);
  EXPECT_EQ(kernel.registers, capped.compiled.ptxas.at(kernel.lowered_name).registers);
}

TEST(CubinReader, MaxnregAttributeCapsRegisters) {
  Built built = build(R"(
__global__ void __maxnreg__(40) limited(float* p) { p[threadIdx.x] += 1; }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  EXPECT_EQ(built.info->kernels.at(0).max_registers, 40u);
}

TEST(CubinReader, LocalArrayStackFrameEqualsPtxasFigure) {
  Built built = build(R"(
__global__ void local_array(int* p, int n) {
  int a[256];
  for (int i = 0; i < 256; ++i) a[i] = p[i] * i;
  p[0] = a[n & 255];
})",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  const KernelInfo& kernel = built.info->kernels.at(0);
  EXPECT_GE(kernel.local_bytes, 1024u);
  EXPECT_EQ(kernel.local_bytes, built.compiled.ptxas.at(kernel.lowered_name).stack_bytes);
}

TEST(CubinReader, SeveralKernelsAreSortedByLoweredName) {
  std::string source = std::string(k_vector_add) + R"(
__global__ void zeta(int* p) { p[0] = 1; }
__global__ void alpha(int* p) { p[0] = 2; }
namespace ns { __global__ void middle(int* p) { p[0] = 3; } }
)";
  Built built = build(source, "sm_89");
  ASSERT_TRUE(built.info) << built.error;
  std::vector<std::string> lowered, names;
  for (const auto& kernel : built.info->kernels) {
    lowered.push_back(kernel.lowered_name);
    names.push_back(kernel.name);
    EXPECT_EQ(kernel.registers, built.compiled.ptxas.at(kernel.lowered_name).registers) << kernel.lowered_name;
  }
  EXPECT_EQ(lowered, (std::vector<std::string>{"_Z4zetaPi", "_Z5alphaPi", "_ZN2ns6middleEPi", "vector_add"}));
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha", "ns::middle", "vector_add"}));
}

TEST(CubinReader, SharedMemoryOfCalledDeviceFunctionCountsForTheKernel) {
  // nvJitLink runs ptxas per function (-c) and links; ptxas's report for the
  // kernel leaves out the callee's 256 bytes, the linked section has them.
  Built built = build(R"(
__device__ __noinline__ void stage(int* p) {
  __shared__ int staging[64];
  staging[threadIdx.x] = p[0];
  __syncthreads();
  p[1] = staging[p[2] & 63];
}
__global__ void caller(int* p) { stage(p); }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  ASSERT_EQ(built.info->kernels.size(), 1u);  // the device function is no kernel
  const KernelInfo& kernel = built.info->kernels[0];
  EXPECT_EQ(kernel.lowered_name, "_Z6callerPi");
  EXPECT_EQ(kernel.static_shared_bytes, 256u);
  EXPECT_EQ(kernel.shared_section_bytes, 256u + 1024u);
}

TEST(CubinReader, ParamBytesCoverTheWholeParameterBuffer) {
  Built built = build(R"(
struct Big { char bytes[1000]; };
__global__ void by_value(Big big, int* out) { out[0] = big.bytes[out[1]]; }
)",
                      "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  EXPECT_EQ(built.info->kernels.at(0).param_bytes, 1008u);  // 1000, aligned to 8, + 8
}

TEST(CubinReader, ArchSpecificBuildIsFlagged) {
  Built specific = build(k_vector_add, "sm_90a");
  ASSERT_TRUE(specific.info) << specific.error;
  EXPECT_EQ(specific.info->sm, 90u);
  EXPECT_TRUE(specific.info->arch_specific);
  EXPECT_FALSE(specific.info->family_specific);

  Built portable = build(k_vector_add, "sm_90");
  ASSERT_TRUE(portable.info) << portable.error;
  EXPECT_FALSE(portable.info->arch_specific);
}

TEST(CubinReader, FamilySpecificBuildIsFlagged) {
  Built built = build(k_vector_add, "sm_100f");
  ASSERT_TRUE(built.info) << built.error;
  EXPECT_EQ(built.info->sm, 100u);
  EXPECT_TRUE(built.info->family_specific);
  EXPECT_FALSE(built.info->arch_specific);
}

TEST(CubinReader, TruncatedCubinIsRejectedAtEveryLength) {
  Built built = build(k_shared_16k, "sm_100");
  ASSERT_TRUE(built.info) << built.error;
  const std::string& cubin = built.compiled.cubin;
  for (size_t length = 0; length < cubin.size(); ++length) {
    auto result = read_cubin(std::string_view(cubin).substr(0, length));
    ASSERT_FALSE(result.ok()) << "accepted " << length << " of " << cubin.size() << " bytes";
    ASSERT_EQ(result.error().code, ErrorCode::invalid_argument);
  }
}

TEST(CubinReader, CorruptedCubinNeverCrashes) {
  Built built = build(k_shared_16k, "sm_90");
  ASSERT_TRUE(built.info) << built.error;
  std::mt19937 random(2024);
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = built.compiled.cubin;
    for (int i = 0; i < 8; ++i) bytes[random() % bytes.size()] = static_cast<char>(random());
    auto result = read_cubin(bytes);
    if (!result.ok()) {
      ASSERT_EQ(result.error().code, ErrorCode::invalid_argument);
    }
  }
}

}  // namespace
}  // namespace kjit
