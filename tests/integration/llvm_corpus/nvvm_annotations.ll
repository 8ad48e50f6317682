; The older way of marking kernels and their bounds (NVVM IR, clang 19 and
; older): only !nvvm.annotations, several entries per node, a required
; block shape, a register cap, a cluster shape; a cluster rank elsewhere
; (ptxas takes a kernel's shape or its rank, not both).
; llc-19 writes no cluster shape; kjit adds it to the PTX.
; expect: accept
; kernel: tile reqntid=32,8,1 maxnreg=64 cluster=2,1,1
; kernel: rows maxntid=128,2,1
; llc-19-drops: cluster
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@tile_shared = internal addrspace(3) global [256 x float] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare void @llvm.nvvm.barrier0()

define void @tile(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %y = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %row = mul i32 %y, 32
  %i = add i32 %row, %x
  %src = getelementptr float, ptr addrspace(1) %in, i32 %i
  %v = load float, ptr addrspace(1) %src, align 4
  %slot = getelementptr [256 x float], ptr addrspace(3) @tile_shared, i32 0, i32 %i
  store float %v, ptr addrspace(3) %slot, align 4
  call void @llvm.nvvm.barrier0()
  %j = sub i32 255, %i
  %other = getelementptr [256 x float], ptr addrspace(3) @tile_shared, i32 0, i32 %j
  %w = load float, ptr addrspace(3) %other, align 4
  %dst = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %w, ptr addrspace(1) %dst, align 4
  ret void
}

define void @rows(ptr addrspace(1) %p) {
entry:
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %q = getelementptr float, ptr addrspace(1) %p, i32 %x
  store float 0.0, ptr addrspace(1) %q, align 4
  ret void
}

!nvvm.annotations = !{!0, !1, !2, !3, !4}
!0 = !{ptr @tile, !"kernel", i32 1, !"reqntidx", i32 32, !"reqntidy", i32 8}
!1 = !{ptr @tile, !"maxnreg", i32 64}
!2 = !{ptr @tile, !"cluster_dim_x", i32 2, !"cluster_dim_y", i32 1, !"cluster_dim_z", i32 1}
!3 = !{ptr @rows, !"maxclusterrank", i32 4}
!4 = !{ptr @rows, !"kernel", i32 1, !"maxntidx", i32 128, !"maxntidy", i32 2}
