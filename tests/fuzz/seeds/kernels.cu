// Kernels for the cubin and PTX seed corpora (make_cuda_seeds.sh): each uses
// something the readers parse, so the seeds cover those records from the start.
__shared__ float shared_table[32];
__device__ __noinline__ float lookup(int i) { return shared_table[i & 31]; }

extern "C" __global__ void __launch_bounds__(256, 2) bounded(float* out, int n, double d) {
  __shared__ float tile[256];
  tile[threadIdx.x] = out[threadIdx.x] + n + d;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 256] + lookup(n);
}

extern "C" __global__ void __maxnreg__(40) spills(float* out, int n) {
  float local[8];  // indexed at run time: a stack frame
#pragma unroll 1
  for (int i = 0; i < 8; ++i) local[i] = out[i] * n;
  out[threadIdx.x] = local[n & 7];
}

extern "C" __global__ void dynamic_shared(float* out) {
  extern __shared__ float smem[];
  smem[threadIdx.x] = 1;
  out[threadIdx.x] = smem[threadIdx.x];
}

struct Pair {
  double a;
  int b;
};
template <typename T>
__global__ void scale(T* x, T a, Pair p) {
  x[threadIdx.x] *= a + p.a + p.b;
}
template __global__ void scale<float>(float*, float, Pair);
