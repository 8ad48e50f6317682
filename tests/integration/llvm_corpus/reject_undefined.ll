; A kernel calling a function neither it nor libdevice defines: rejected by
; the link (ptxas: "Unresolved extern function").
; expect: reject
; reason: external_helper
target triple = "nvptx64-nvidia-cuda"

declare float @external_helper(float)

define ptx_kernel void @k(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p, align 4
  %r = call float @external_helper(float %v)
  store float %r, ptr addrspace(1) %p, align 4
  ret void
}
