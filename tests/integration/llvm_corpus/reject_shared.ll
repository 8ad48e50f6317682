; More static shared memory than any NVIDIA GPU has: rejected by the
; assembler.
; expect: reject
; reason: shared data
target triple = "nvptx64-nvidia-cuda"

@big = internal addrspace(3) global [100000 x float] undef, align 4

define ptx_kernel void @k(ptr addrspace(1) %p, i32 %i) {
  %s = getelementptr [100000 x float], ptr addrspace(3) @big, i32 0, i32 %i
  store float 1.0, ptr addrspace(3) %s, align 4
  %v = load volatile float, ptr addrspace(3) %s, align 4
  store float %v, ptr addrspace(1) %p, align 4
  ret void
}
