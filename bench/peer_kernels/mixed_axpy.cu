// Includes the toolkit's fp16 and bf16 headers, as many real kernels do: most
// of its compile is parsing them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void mixed_axpy(float a, const __half* x, const __nv_bfloat16* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * __half2float(x[i]) + __bfloat162float(y[i]);
}
