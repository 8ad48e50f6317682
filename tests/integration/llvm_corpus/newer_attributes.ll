; How newer LLVMs (20, 21) write the same things: kernels by the ptx_kernel
; calling convention, bounds as "nvvm.*" function attributes. llc-19 reads
; no such attribute; kjit reads both forms.
; expect: accept
; kernel: tile reqntid=32,8,1 maxnreg=64 cluster=2,1,1
; kernel: rows maxntid=128,2,1
; llc-19-drops: bounds
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define ptx_kernel void @tile(ptr addrspace(1) %p) #0 {
entry:
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %q = getelementptr float, ptr addrspace(1) %p, i32 %x
  store float 1.0, ptr addrspace(1) %q, align 4
  ret void
}

define ptx_kernel void @rows(ptr addrspace(1) %p) #1 {
entry:
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %q = getelementptr float, ptr addrspace(1) %p, i32 %x
  store float 0.0, ptr addrspace(1) %q, align 4
  ret void
}

attributes #0 = { "nvvm.reqntid"="32,8" "nvvm.maxnreg"="64" "nvvm.cluster_dim"="2,1,1" "target-cpu"="sm_90" }
attributes #1 = { "nvvm.maxntid"="128,2,1" "nvvm.maxclusterrank"="4" "target-cpu"="sm_90" }
