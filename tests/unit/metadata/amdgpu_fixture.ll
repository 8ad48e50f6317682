; Kernels for the hsaco reader's tests, compiled for several gfx processors at
; build time by llc-19 and linked by ld.lld into code objects. The first uses
; 32 KiB of LDS and launch bounds of 256 threads; the second is a C symbol
; with a required workgroup size and no LDS.
target triple = "amdgcn-amd-amdhsa"

; 8192 floats: 32 KiB of LDS, the group segment the metadata must report.
@tile = internal addrspace(3) global [8192 x float] poison, align 16

declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @_Z10tile_scalePfS_f(ptr addrspace(1) %out, ptr addrspace(1) %in, float %s) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %src = getelementptr inbounds float, ptr addrspace(1) %in, i64 %idx
  %v = load float, ptr addrspace(1) %src, align 4
  %slot = getelementptr inbounds [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %slot, align 4
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %rev = sub i32 8191, %tid
  %rslot = getelementptr inbounds [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %rev
  %w = load float, ptr addrspace(3) %rslot, align 4
  %r = fmul float %w, %s
  %dst = getelementptr inbounds float, ptr addrspace(1) %out, i64 %idx
  store float %r, ptr addrspace(1) %dst, align 4
  ret void
}

define amdgpu_kernel void @vector_add(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i32 %n) !reqd_work_group_size !0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %in = icmp slt i32 %tid, %n
  br i1 %in, label %body, label %done
body:
  %idx = zext i32 %tid to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %idx
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %idx
  %x = load float, ptr addrspace(1) %pa, align 4
  %y = load float, ptr addrspace(1) %pb, align 4
  %z = fadd float %x, %y
  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %idx
  store float %z, ptr addrspace(1) %pc, align 4
  br label %done
done:
  ret void
}

declare void @llvm.amdgcn.s.barrier()

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
!0 = !{i32 64, i32 1, i32 1}
