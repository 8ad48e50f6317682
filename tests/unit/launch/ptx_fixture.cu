// Kernels for the PTX reader tests: nvcc turns this into PTX and ptxas into
// a cubin at build time, and the tests check that the PTX reader agrees with
// the cubin reader on every kernel. Each kernel exercises one PTX feature:
// launch bounds, demoted shared arrays, module-scope shared memory reached
// through a function, dynamic shared memory, clusters, .maxnreg, aggregates
// in the parameter block, a mangled template name.
__shared__ float shared_table[32];
__device__ __noinline__ float lookup(int i) { return shared_table[i & 31]; }
extern "C" __global__ void __launch_bounds__(256) bounded(float* out, int n, double d) {
  __shared__ float tile[1024];
  __shared__ double other[3];
  tile[threadIdx.x] = out[threadIdx.x] + n + d;
  other[threadIdx.x % 3] = d;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 1024] + other[0];
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* out) {
  extern __shared__ float dynamic_smem[];
  dynamic_smem[threadIdx.x] = 1;
  out[threadIdx.x] = dynamic_smem[threadIdx.x];
}
struct Pair { double a; int b; };
extern "C" __global__ void __maxnreg__(40) mixed_params(Pair s, char c, float* p) { p[0] = s.a + s.b + c; }
extern "C" __global__ void uses_helper(float* out) {
  shared_table[threadIdx.x % 32] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = lookup(threadIdx.x + 1);
}
extern "C" __global__ void also_uses_helper(float* out) {
  __shared__ int local_counter[5];
  local_counter[threadIdx.x % 5] = 1;
  out[threadIdx.x] = lookup(threadIdx.x) + local_counter[0];
}
template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }
template __global__ void scale<float>(float*, float);
