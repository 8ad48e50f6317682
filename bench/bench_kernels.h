// The CUDA C++ kernels the compile benchmark compiles: small, but each one
// exercises a different part of the front end (templates and name
// expressions, shared memory, launch bounds, toolkit headers).
#pragma once

#include <string>
#include <vector>

#include "support/cuda_kernels.h"

namespace kjit::bench {

struct BenchKernel {
  std::string name;  // shown in the tables; also the input name "<name>.cu"
  std::string source;
  std::vector<std::string> name_expressions;  // for templated kernels
};

inline std::vector<BenchKernel> bench_kernels() {
  return {
      {"vector_add", test::k_vector_add, {}},
      {"saxpy",
       R"(
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}
)",
       {}},
      {"scale_template",
       R"(
template <typename T, int Unroll>
__global__ void scale_n(T* data, T factor, int n) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * Unroll;
#pragma unroll
  for (int k = 0; k < Unroll; ++k)
    if (base + k < n) data[base + k] *= factor;
}
)",
       {"scale_n<float, 4>", "scale_n<double, 2>"}},
      {"block_reduce",
       R"(
extern "C" __global__ void block_reduce(const float* in, float* block_sums, int n) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
  float v = 0.0f;
  if (i < n) v += in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    v = partial[threadIdx.x] + partial[threadIdx.x + 32];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x == 0) block_sums[blockIdx.x] = v;
  }
}
)",
       {}},
      {"tiled_matmul",
       R"(
#define TILE 16
extern "C" __global__ void __launch_bounds__(TILE * TILE)
tiled_matmul(const float* a, const float* b, float* c, int n) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
    int ac = t * TILE + threadIdx.x, br = t * TILE + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < n && ac < n) ? a[row * n + ac] : 0.0f;
    bs[threadIdx.y][threadIdx.x] = (br < n && col < n) ? b[br * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}
)",
       {}},
      // Toolkit headers: most of this compile is parsing cuda_fp16.h and
      // cuda_bf16.h, as for many real kernels. (Not cooperative_groups.h:
      // with CUDA 13 it alone costs NVRTC over a second per compile, which
      // would swamp everything else here and blow the time budget.)
      {"mixed_axpy",
       R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void mixed_axpy(float a, const __half* x, const __nv_bfloat16* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * __half2float(x[i]) + __bfloat162float(y[i]);
}
)",
       {}},
  };
}

// The smallest kernel there is: compiling it is almost all fixed cost, so its
// round trip shows the per-request overhead.
inline BenchKernel trivial_kernel() {
  return {"noop", "extern \"C\" __global__ void noop() {}\n", {}};
}

}  // namespace kjit::bench
