// Precompiled headers in the workers change how fast a miss compiles, never
// what it compiles: families of kernels sharing their includes (CUB,
// cuda_fp16/bf16 with cooperative_groups, cuda::std with cuda/barrier) give
// the same cubin bytes and kernels from a worker whose PCHs are warm as from
// a daemon without PCH, and a header of the request that changes is never
// served from an earlier request's PCH.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit::test {
namespace {

struct Kernel {
  std::string name;
  std::string source;
  std::map<std::string, std::string> headers = {};
};

std::string cub_kernel(int i) {
  const std::string n = std::to_string(i);
  return "#include <cub/block/block_reduce.cuh>\n"
         "#include <cub/block/block_scan.cuh>\n"
         "struct Larger { __device__ int operator()(int a, int b) const { return a > b ? a : b; } };\n"
         "extern \"C\" __global__ void cub_" + n + "(const int* in, int* out) {\n"
         "  using R = cub::BlockReduce<int, 128>;\n"
         "  using S = cub::BlockScan<int, 128>;\n"
         "  __shared__ union { typename R::TempStorage r; typename S::TempStorage s; } t;\n"
         "  int v = in[blockIdx.x * 128 + threadIdx.x] * " + n + ";\n"
         "  int p; S(t.s).ExclusiveSum(v, p);\n"
         "  __syncthreads();\n"
         "  int s = R(t.r)." + (i % 2 ? "Sum(p)" : "Reduce(p, Larger())") + ";\n"
         "  if (threadIdx.x == 0) out[blockIdx.x] = s + " + n + ";\n"
         "}\n";
}

std::string half_kernel(int i) {
  const std::string n = std::to_string(i);
  return "#include <cuda_fp16.h>\n"
         "#include <cuda_bf16.h>\n"
         "#include <cooperative_groups.h>\n"
         "#include <cooperative_groups/reduce.h>\n"
         "namespace cg = cooperative_groups;\n"
         "extern \"C\" __global__ void half_" + n + "(const __half* a, const __nv_bfloat16* b, float* out) {\n"
         "  auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
         "  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  float v = __half2float(a[i]) * " + n + ".0f + __bfloat162float(b[i]);\n"
         "  float s = cg::reduce(tile, v, cg::plus<float>());\n"
         "  if (tile.thread_rank() == 0) out[i / 32] = s;\n"
         "}\n";
}

std::string barrier_kernel(int i) {
  const std::string n = std::to_string(i);
  return "#include <cuda/std/array>\n"
         "#include <cuda/std/type_traits>\n"
         "#include <cuda/barrier>\n"
         "template <typename T> __device__ T twice(T v) { return cuda::std::is_integral_v<T> ? v * 2 : v; }\n"
         "extern \"C\" __global__ void barrier_" + n + "(int* out) {\n"
         "  __shared__ cuda::barrier<cuda::thread_scope_block>* bar;\n"
         "  __shared__ char storage[sizeof(cuda::barrier<cuda::thread_scope_block>)];\n"
         "  if (threadIdx.x == 0) { bar = reinterpret_cast<cuda::barrier<cuda::thread_scope_block>*>(storage);\n"
         "    init(bar, blockDim.x); }\n"
         "  __syncthreads();\n"
         "  cuda::std::array<int, 4> a{" + n + ", 2, 3, 4};\n"
         "  bar->arrive_and_wait();\n"
         "  out[threadIdx.x] = twice(a[threadIdx.x % 4]);\n"
         "}\n";
}

// One source whose request header says what it computes.
Kernel header_kernel(int value) {
  return {"with_header",
          "#include <cub/block/block_reduce.cuh>\n"
          "#include \"params.h\"\n"
          "extern \"C\" __global__ void with_header(int* out) { out[threadIdx.x] = PARAM_VALUE + param(); }\n",
          {{"params.h", "#define PARAM_VALUE " + std::to_string(value) + "\n__device__ int param() { return " +
                            std::to_string(value * 7) + "; }\n"}}};
}

std::vector<Kernel> families() {
  std::vector<Kernel> out;
  for (int i = 1; i <= 3; ++i) out.push_back({"cub_" + std::to_string(i), cub_kernel(i)});
  for (int i = 1; i <= 2; ++i) out.push_back({"half_" + std::to_string(i), half_kernel(i)});
  for (int i = 1; i <= 2; ++i) out.push_back({"barrier_" + std::to_string(i), barrier_kernel(i)});
  for (int value : {1111, 2222}) out.push_back(header_kernel(value));
  return out;
}

Result<CompileResult> compile(const std::string& socket, const Kernel& kernel) {
  CompileRequest request;
  request.input = kernel.source;
  request.input_name = "family.cu";  // one name: NVRTC names its PCH files after it
  request.target = "cuda:90";
  request.options = {"-std=c++17"};
  request.headers = kernel.headers;
  return Client(socket).compile(request);
}

TEST(WorkerPch, WarmPrecompiledHeadersGiveTheSameCubinsAsNone) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  // One worker each, no cache: every request compiles, in the same worker.
  TestDaemon with_pch({"--no-cache", "--compile-workers", "1", "--metrics-port", std::to_string(port)});
  TestDaemon without({"--no-cache", "--compile-workers", "1", "--no-pch"});
  for (const Kernel& kernel : families()) {
    SCOPED_TRACE(kernel.name);
    auto warm = compile(with_pch.socket_path(), kernel);
    ASSERT_TRUE(warm) << warm.error().message << "\n" << warm.error().log;
    auto plain = compile(without.socket_path(), kernel);
    ASSERT_TRUE(plain) << plain.error().message << "\n" << plain.error().log;
    EXPECT_TRUE(warm->artifact == plain->artifact) << "the cubins differ (" << warm->artifact.size() << " and "
                                                    << plain->artifact.size() << " bytes)";
    EXPECT_EQ(warm->kernels, plain->kernels);
    EXPECT_EQ(warm->lowered_names, plain->lowered_names);
    EXPECT_EQ(warm->key, plain->key);
    // The compiler's own warnings stay; automatic PCH's messages are not the request's.
    EXPECT_EQ(warm->log, plain->log);
    EXPECT_EQ(warm->log.find("precompiled header"), std::string::npos) << warm->log;
  }
  const std::string text = scrape_metrics(port);
  // Each family writes a PCH and its later kernels use it; the two
  // requests with different params.h contents use different ones.
  EXPECT_GE(metric_total(text, "kjit_worker_pch_total", {{"event", "create"}}), 4) << text;
  EXPECT_GE(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}), 4) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "fallback"}}), 0) << text;
}

// A worker's PCH files stay within pch_bytes: a bound smaller than one PCH
// evicts each after the compile that wrote it, and every compile still
// succeeds.
TEST(WorkerPch, ABoundSmallerThanOnePchEvictsAndCompilesGoOn) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--no-cache", "--compile-workers", "1", "--pch-bytes", "1048576", "--metrics-port",
                     std::to_string(port)});
  for (int i = 1; i <= 2; ++i) {
    auto ok = compile(daemon.socket_path(), {"cub", cub_kernel(i)});
    ASSERT_TRUE(ok) << ok.error().message << "\n" << ok.error().log;
  }
  const std::string text = scrape_metrics(port);
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "create"}}), 2) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "evict"}}), 2) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}), 0) << text;
}

}  // namespace
}  // namespace kjit::test
