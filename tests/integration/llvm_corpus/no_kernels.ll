; A library of device functions and no kernel, as a front end writes one to
; link into others: accepted, and its binary has no kernel.
; expect: accept
target triple = "nvptx64-nvidia-cuda"

declare float @__nv_powf(float, float)

define float @gain(float %x, float %g) {
  %p = call float @__nv_powf(float %x, float %g)
  ret float %p
}

define internal float @unused_helper(float %x) {
  ret float %x
}
