// Kernels for the multi-target benchmark (bench/multi_target_bench.sh): one
// translation unit with the shapes real libraries ship in a fatbin.
#include <cuda_fp16.h>

template <int Tile>
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[Tile][Tile + 1];
  int x = blockIdx.x * Tile + threadIdx.x, y = blockIdx.y * Tile + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * Tile + threadIdx.x;
  y = blockIdx.x * Tile + threadIdx.y;
  if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
template __global__ void transpose<32>(const float*, float*, int, int);

extern "C" __global__ void __launch_bounds__(256) row_softmax(const float* in, float* out, int cols) {
  __shared__ float scratch[32];
  const float* row = in + blockIdx.x * cols;
  float m = -3.402823466e38f;  // -FLT_MAX: NVRTC has no <cmath> macros
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = m;
  __syncthreads();
  m = scratch[0];
  for (int w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, scratch[w]);
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(row[c] - m);
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0.0f;
  for (int w = 0; w < blockDim.x / 32; ++w) sum += scratch[w];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = __expf(row[c] - m) / sum;
}

extern "C" __global__ void half_gemv(const __half* a, const __half* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.y + threadIdx.y;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) acc += __half2float(a[r * cols + c]) * __half2float(x[c]);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) y[r] = acc;
}
