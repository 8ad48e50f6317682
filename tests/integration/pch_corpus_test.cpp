// Precompiled headers change how fast a miss compiles, never what it
// compiles, across a wider corpus than the header families of pch_test.cpp:
// the benchmark's kernels (templates with name expressions, shared memory,
// launch bounds, fp16/bf16) and kernels in the manner of NVIDIA's NVRTC
// samples (tiled matrix multiply with cooperative groups, atomics, clock,
// warp votes, templates, inline PTX, device assert), written here. Each is
// compiled twice by a daemon with PCH (the first compile of its header set
// writes the PCH, the second uses it) and once by one without; the cubins,
// kernels, keys and logs must be the same.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_kernels.h"
#include "kjit/client.h"
#include "support/daemon_test.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit::test {
namespace {

struct CorpusKernel {
  std::string name;
  std::string source;
  std::vector<std::string> name_expressions = {};
};

// Each starts with the includes that make its header set, as real kernels do.
std::vector<CorpusKernel> sample_style_kernels() {
  return {
      {"matmul_cg", R"(#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <int Tile>
__device__ void matmul_tile(const float* a, const float* b, float* c, int n) {
  __shared__ float as[Tile][Tile], bs[Tile][Tile];
  cg::thread_block block = cg::this_thread_block();
  const int row = blockIdx.y * Tile + threadIdx.y, col = blockIdx.x * Tile + threadIdx.x;
  float sum = 0;
  for (int t = 0; t < n / Tile; ++t) {
    as[threadIdx.y][threadIdx.x] = a[row * n + t * Tile + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t * Tile + threadIdx.y) * n + col];
    block.sync();
#pragma unroll
    for (int k = 0; k < Tile; ++k) sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
    block.sync();
  }
  c[row * n + col] = sum;
}
extern "C" __global__ void matmul_32(const float* a, const float* b, float* c, int n) { matmul_tile<32>(a, b, c, n); }
)"},
      {"atomics", R"(#include <cuda/std/cstdint>
extern "C" __global__ void atomics(int* values, unsigned* bits, cuda::std::uint64_t* wide) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&values[0], 10);
  atomicExch(&values[1], static_cast<int>(tid));
  atomicMax(&values[2], static_cast<int>(tid));
  atomicMin(&values[3], static_cast<int>(tid));
  atomicInc(reinterpret_cast<unsigned*>(&values[4]), 17);
  atomicCAS(&values[5], static_cast<int>(tid) - 1, static_cast<int>(tid));
  atomicAnd(&bits[0], 2 * tid + 7);
  atomicOr(&bits[1], 1u << (tid % 32));
  atomicXor(&bits[2], tid);
  atomicAdd(reinterpret_cast<unsigned long long*>(wide), 1ull);
}
)"},
      {"clock_min", R"(#include <cuda/std/climits>
extern "C" __global__ void clock_min(const float* in, float* out, long long* timer) {
  extern __shared__ float shared[];
  const int tid = threadIdx.x;
  if (tid == 0) timer[blockIdx.x] = clock64();
  shared[tid] = in[tid];
  shared[tid + blockDim.x] = in[tid + blockDim.x];
  for (int d = blockDim.x; d > 0; d /= 2) {
    __syncthreads();
    if (tid < d) shared[tid] = fminf(shared[tid], shared[tid + d]);
  }
  if (tid == 0) out[blockIdx.x] = shared[0];
  __syncthreads();
  if (tid == 0) timer[blockIdx.x + gridDim.x] = clock64();
}
)"},
      {"votes", R"(#include <cooperative_groups.h>
extern "C" __global__ void votes(const int* in, unsigned* any, unsigned* all, unsigned* ballot) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  const bool set = in[tid] != 0;
  any[tid] = __any_sync(0xffffffffu, set);
  all[tid] = __all_sync(0xffffffffu, set);
  ballot[tid] = __ballot_sync(0xffffffffu, set) & __activemask();
}
)"},
      {"templates", R"(#include <cuda/std/type_traits>
template <typename T>
__global__ void square_all(T* data, int n) {
  static_assert(cuda::std::is_arithmetic_v<T>, "numbers only");
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * data[i];
}
)",
       {"square_all<int>", "square_all<float>", "square_all<double>"}},
      {"inline_ptx", R"(#include <cuda/std/cstdint>
extern "C" __global__ void lane_ids(cuda::std::uint32_t* out) {
  cuda::std::uint32_t lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[blockIdx.x * blockDim.x + threadIdx.x] = lane;
}
)"},
      {"device_assert", R"(#include <cuda/std/cassert>
extern "C" __global__ void checked_copy(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(i < n);
  out[i] = in[i];
}
)"},
  };
}

std::vector<CorpusKernel> corpus() {
  std::vector<CorpusKernel> out;
  for (const bench::BenchKernel& kernel : bench::bench_kernels())
    out.push_back({kernel.name, kernel.source, kernel.name_expressions});
  for (CorpusKernel& kernel : sample_style_kernels()) out.push_back(std::move(kernel));
  return out;
}

// The #include lines before a source's code: what decides its PCH; empty
// when it includes nothing first (such a compile writes no PCH).
std::string leading_includes(const std::string& source) {
  std::istringstream lines(source);
  std::string line, prefix;
  while (std::getline(lines, line)) {
    if (line.empty() && prefix.empty()) continue;
    if (!line.starts_with("#include")) break;
    prefix += line + "\n";
  }
  return prefix;
}

Result<CompileResult> compile(const std::string& socket, const CorpusKernel& kernel) {
  CompileRequest request;
  request.input = kernel.source;
  request.input_name = kernel.name + ".cu";
  request.target = "cuda:90";
  request.options = {"-std=c++17"};
  request.name_expressions = kernel.name_expressions;
  return Client(socket).compile(request);
}

TEST(WorkerPch, BenchmarkAndSampleStyleKernelsCompileTheSameWithAndWithoutPch) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  // One worker each, no cache: every request compiles, in the same worker.
  TestDaemon with_pch({"--no-cache", "--compile-workers", "1", "--metrics-port", std::to_string(port)});
  TestDaemon without({"--no-cache", "--compile-workers", "1", "--no-pch"});
  size_t with_leading_include = 0;
  std::set<std::string> header_sets;
  for (const CorpusKernel& kernel : corpus()) {
    SCOPED_TRACE(kernel.name);
    if (const std::string prefix = leading_includes(kernel.source); !prefix.empty()) {
      ++with_leading_include;
      header_sets.insert(prefix);
    }
    auto first = compile(with_pch.socket_path(), kernel);
    ASSERT_TRUE(first) << first.error().message << "\n" << first.error().log;
    auto warm = compile(with_pch.socket_path(), kernel);
    ASSERT_TRUE(warm) << warm.error().message << "\n" << warm.error().log;
    auto plain = compile(without.socket_path(), kernel);
    ASSERT_TRUE(plain) << plain.error().message << "\n" << plain.error().log;
    for (const CompileResult* with : {&*first, &*warm}) {
      EXPECT_TRUE(with->artifact == plain->artifact)
          << "the cubins differ (" << with->artifact.size() << " and " << plain->artifact.size() << " bytes)";
      EXPECT_EQ(with->kernels, plain->kernels);
      EXPECT_EQ(with->lowered_names, plain->lowered_names);
      EXPECT_EQ(with->key, plain->key);
      EXPECT_EQ(with->log, plain->log);
    }
  }
  // Each header set wrote its PCH at the first compile of the set, and every
  // other compile of a kernel including a header first used one: the
  // comparison above is of compiles that really went through a PCH.
  ASSERT_GE(with_leading_include, 8u);
  ASSERT_LT(header_sets.size(), with_leading_include);  // some kernels share a set
  const std::string text = scrape_metrics(port);
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "first"}}), header_sets.size()) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}),
            2 * with_leading_include - header_sets.size())
      << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "fallback"}}), 0) << text;
}

}  // namespace
}  // namespace kjit::test
