// A kernel with a compile-time cluster shape and demoted shared memory, for
// the sm_90+ cubin and PTX seeds (clusters need sm_90).
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* out) {
  __shared__ int counter[5];
  counter[threadIdx.x % 5] = 1;
  out[threadIdx.x] = counter[0];
}
