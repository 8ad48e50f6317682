; Written the way Numba's CUDA target writes a kernel: NVVM's data layout,
; a device function returning a status through the Numba calling convention,
; a kernel wrapper marked by !nvvm.annotations, math through libdevice.
; expect: accept
; kernel: _ZN6cudapy8__main__6expsinB2v1E5ArrayIfLi1E1C7mutable7alignedE
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@_ZN08NumbaEnv8__main__6expsinB2v1E5ArrayIfLi1E1C7mutable7alignedE = common global ptr null

declare double @__nv_exp(double)
declare double @__nv_sin(double)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define linkonce_odr i32 @_ZN8__main__6expsinB2v1E5ArrayIfLi1E1C7mutable7alignedE(ptr noalias nocapture %retptr, ptr noalias nocapture %excinfo, ptr %arg.x.0, ptr %arg.x.1, i64 %arg.x.2, i64 %arg.x.3, ptr %arg.x.4, i64 %arg.x.5.0, i64 %arg.x.6.0) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %block = mul i32 %ctaid, %ntid
  %i32 = add i32 %block, %tid
  %i = sext i32 %i32 to i64
  %inside = icmp slt i64 %i, %arg.x.5.0
  br i1 %inside, label %body, label %done
body:
  %p = getelementptr float, ptr %arg.x.4, i64 %i
  %x = load float, ptr %p, align 4
  %xd = fpext float %x to double
  %e = call double @__nv_exp(double %xd)
  %s = call double @__nv_sin(double %e)
  %sf = fptrunc double %s to float
  store float %sf, ptr %p, align 4
  br label %done
done:
  store ptr null, ptr %retptr, align 8
  ret i32 0
}

define void @_ZN6cudapy8__main__6expsinB2v1E5ArrayIfLi1E1C7mutable7alignedE(ptr %arg.x.0, ptr %arg.x.1, i64 %arg.x.2, i64 %arg.x.3, ptr %arg.x.4, i64 %arg.x.5.0, i64 %arg.x.6.0) {
entry:
  %retptr = alloca ptr, align 8
  %excinfo = alloca ptr, align 8
  store ptr null, ptr %excinfo, align 8
  %status = call i32 @_ZN8__main__6expsinB2v1E5ArrayIfLi1E1C7mutable7alignedE(ptr %retptr, ptr %excinfo, ptr %arg.x.0, ptr %arg.x.1, i64 %arg.x.2, i64 %arg.x.3, ptr %arg.x.4, i64 %arg.x.5.0, i64 %arg.x.6.0)
  ret void
}

!nvvm.annotations = !{!0}
!nvvmir.version = !{!1}
!0 = !{ptr @_ZN6cudapy8__main__6expsinB2v1E5ArrayIfLi1E1C7mutable7alignedE, !"kernel", i32 1}
!1 = !{i32 2, i32 0}
