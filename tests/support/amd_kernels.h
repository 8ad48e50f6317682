// Kernels for AMD targets, shared by the integration tests and the
// benchmarks: one computation as HIP source and as LLVM IR.
#pragma once

namespace kjit::test {

// 32 KiB of __shared__ and __launch_bounds__(256): the code object must say
// both.
constexpr const char* k_hip_kernel = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(256) tile_sum(const float* in, float* out) {
  __shared__ float tile[8192];
  for (int j = threadIdx.x; j < 8192; j += blockDim.x) tile[j] = in[blockIdx.x * 8192 + j];
  __syncthreads();
  float sum = 0;
  for (int j = threadIdx.x; j < 8192; j += blockDim.x) sum += tile[8191 - j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
)";

// The same shape in LLVM IR, as a front end (Triton's AMD back end, clang)
// writes it, plus a kernel without LDS.
constexpr const char* k_amdgpu_ir = R"(target triple = "amdgcn-amd-amdhsa"
@tile = internal addrspace(3) global [8192 x float] undef, align 4

define amdgpu_kernel void @tile_swap(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %src = getelementptr float, ptr addrspace(1) %in, i64 %idx
  %v = load float, ptr addrspace(1) %src, align 4
  %slot = getelementptr [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %other = sub i32 8191, %tid
  %slot2 = getelementptr [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %other
  %w = load float, ptr addrspace(3) %slot2, align 4
  %dst = getelementptr float, ptr addrspace(1) %out, i64 %idx
  store float %w, ptr addrspace(1) %dst, align 4
  ret void
}

define amdgpu_kernel void @scale(ptr addrspace(1) %x, float %a) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %p = getelementptr float, ptr addrspace(1) %x, i64 %idx
  %v = load float, ptr addrspace(1) %p, align 4
  %m = fmul float %v, %a
  store float %m, ptr addrspace(1) %p, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
)";

}  // namespace kjit::test
