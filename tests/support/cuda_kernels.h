// CUDA C++ kernels the tests compile, and the benchmarks (vector_add).
#pragma once

namespace kjit::test {

inline constexpr const char* k_vector_add = R"(
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

inline constexpr const char* k_templated = R"(
template <typename T>
__global__ void scale(T* data, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
)";

inline constexpr const char* k_launch_bounds = R"(
extern "C" __global__ void __launch_bounds__(256) bounded(float* x) {
  x[threadIdx.x] *= 2.0f;
}
)";

inline constexpr const char* k_shared_16k = R"(
extern "C" __global__ void tiled(float* out) {
  __shared__ float tile[4096];  // 16 KiB
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}
)";

inline constexpr const char* k_toolkit_headers = R"(
#include <cooperative_groups.h>
#include <cuda_fp16.h>
namespace cg = cooperative_groups;
extern "C" __global__ void halves(__half* x) {
  cg::thread_block block = cg::this_thread_block();
  x[block.thread_rank()] = __hadd(x[block.thread_rank()], __float2half(1.0f));
}
)";

}  // namespace kjit::test
