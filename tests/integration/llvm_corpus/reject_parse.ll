; Text IR that does not parse.
; expect: reject
; reason: could not parse
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr addrspace(1) %p) {
  store float 1.0, ptr addrspace(1) %p, align 4
  ret
}
