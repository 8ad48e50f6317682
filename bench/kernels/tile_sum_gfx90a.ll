; tile_sum from tests/support/amd_kernels.h (k_hip_kernel) as clang 19's HIP front end lowers it, unoptimised,
; for the LLVM path of kjit_bench_amd: clang-19 -x hip --cuda-device-only --offload-arch=gfx90a -nogpulib -nogpuinc
;   -include <a prelude defining __global__, __shared__, threadIdx, blockIdx and a blockDim of 256> -O0
;   -Xclang -disable-O0-optnone -emit-llvm -S
; ModuleID = 'k.hip'
source_filename = "k.hip"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

%struct.kjit_dim = type { i32 }

@_ZZ8tile_sumE4tile = internal addrspace(3) global [8192 x float] undef, align 16
@__hip_cuid_ed7679bfd78160a8 = addrspace(1) global i8 0
@llvm.compiler.used = appending addrspace(1) global [1 x ptr] [ptr addrspacecast (ptr addrspace(1) @__hip_cuid_ed7679bfd78160a8 to ptr)], section "llvm.metadata"
@__oclc_ABI_version = weak_odr hidden local_unnamed_addr addrspace(4) constant i32 500

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define protected amdgpu_kernel void @tile_sum(ptr addrspace(1) noundef %0, ptr addrspace(1) noundef %1) #0 {
  %3 = alloca ptr, align 8, addrspace(5)
  %4 = alloca ptr, align 8, addrspace(5)
  %5 = alloca ptr, align 8, addrspace(5)
  %6 = alloca ptr, align 8, addrspace(5)
  %7 = alloca i32, align 4, addrspace(5)
  %8 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %9 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %10 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %11 = alloca float, align 4, addrspace(5)
  %12 = alloca i32, align 4, addrspace(5)
  %13 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %14 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %15 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %16 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %17 = alloca %struct.kjit_dim, align 4, addrspace(5)
  %18 = addrspacecast ptr addrspace(5) %3 to ptr
  %19 = addrspacecast ptr addrspace(5) %4 to ptr
  %20 = addrspacecast ptr addrspace(5) %5 to ptr
  %21 = addrspacecast ptr addrspace(5) %6 to ptr
  %22 = addrspacecast ptr addrspace(5) %7 to ptr
  %23 = addrspacecast ptr addrspace(5) %8 to ptr
  %24 = addrspacecast ptr addrspace(5) %9 to ptr
  %25 = addrspacecast ptr addrspace(5) %10 to ptr
  %26 = addrspacecast ptr addrspace(5) %11 to ptr
  %27 = addrspacecast ptr addrspace(5) %12 to ptr
  %28 = addrspacecast ptr addrspace(5) %13 to ptr
  %29 = addrspacecast ptr addrspace(5) %14 to ptr
  %30 = addrspacecast ptr addrspace(5) %15 to ptr
  %31 = addrspacecast ptr addrspace(5) %16 to ptr
  %32 = addrspacecast ptr addrspace(5) %17 to ptr
  store ptr addrspace(1) %0, ptr %18, align 8
  %33 = load ptr, ptr %18, align 8
  store ptr addrspace(1) %1, ptr %19, align 8
  %34 = load ptr, ptr %19, align 8
  store ptr %33, ptr %20, align 8
  store ptr %34, ptr %21, align 8
  %35 = getelementptr inbounds %struct.kjit_dim, ptr %23, i32 0, i32 0
  %36 = call noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x()
  store i32 %36, ptr %35, align 4
  %37 = getelementptr inbounds %struct.kjit_dim, ptr %23, i32 0, i32 0
  %38 = load i32, ptr %37, align 4
  store i32 %38, ptr %22, align 4
  br label %39

39:                                               ; preds = %57, %2
  %40 = load i32, ptr %22, align 4
  %41 = icmp slt i32 %40, 8192
  br i1 %41, label %42, label %61

42:                                               ; preds = %39
  %43 = load ptr, ptr %20, align 8
  %44 = getelementptr inbounds %struct.kjit_dim, ptr %24, i32 0, i32 0
  %45 = call i32 @llvm.amdgcn.workgroup.id.x()
  store i32 %45, ptr %44, align 4
  %46 = getelementptr inbounds %struct.kjit_dim, ptr %24, i32 0, i32 0
  %47 = load i32, ptr %46, align 4
  %48 = mul i32 %47, 8192
  %49 = load i32, ptr %22, align 4
  %50 = add i32 %48, %49
  %51 = zext i32 %50 to i64
  %52 = getelementptr inbounds float, ptr %43, i64 %51
  %53 = load float, ptr %52, align 4
  %54 = load i32, ptr %22, align 4
  %55 = sext i32 %54 to i64
  %56 = getelementptr inbounds [8192 x float], ptr addrspacecast (ptr addrspace(3) @_ZZ8tile_sumE4tile to ptr), i64 0, i64 %55
  store float %53, ptr %56, align 4
  br label %57

57:                                               ; preds = %42
  %58 = getelementptr inbounds %struct.kjit_dim, ptr %25, i32 0, i32 0
  store i32 256, ptr %58, align 4
  %59 = load i32, ptr %22, align 4
  %60 = add i32 %59, 256
  store i32 %60, ptr %22, align 4
  br label %39, !llvm.loop !6

61:                                               ; preds = %39
  call void @llvm.amdgcn.s.barrier()
  store float 0.000000e+00, ptr %26, align 4
  %62 = getelementptr inbounds %struct.kjit_dim, ptr %28, i32 0, i32 0
  %63 = call noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x()
  store i32 %63, ptr %62, align 4
  %64 = getelementptr inbounds %struct.kjit_dim, ptr %28, i32 0, i32 0
  %65 = load i32, ptr %64, align 4
  store i32 %65, ptr %27, align 4
  br label %66

66:                                               ; preds = %77, %61
  %67 = load i32, ptr %27, align 4
  %68 = icmp slt i32 %67, 8192
  br i1 %68, label %69, label %81

69:                                               ; preds = %66
  %70 = load i32, ptr %27, align 4
  %71 = sub nsw i32 8191, %70
  %72 = sext i32 %71 to i64
  %73 = getelementptr inbounds [8192 x float], ptr addrspacecast (ptr addrspace(3) @_ZZ8tile_sumE4tile to ptr), i64 0, i64 %72
  %74 = load float, ptr %73, align 4
  %75 = load float, ptr %26, align 4
  %76 = fadd contract float %75, %74
  store float %76, ptr %26, align 4
  br label %77

77:                                               ; preds = %69
  %78 = getelementptr inbounds %struct.kjit_dim, ptr %29, i32 0, i32 0
  store i32 256, ptr %78, align 4
  %79 = load i32, ptr %27, align 4
  %80 = add i32 %79, 256
  store i32 %80, ptr %27, align 4
  br label %66, !llvm.loop !8

81:                                               ; preds = %66
  %82 = load float, ptr %26, align 4
  %83 = load ptr, ptr %21, align 8
  %84 = getelementptr inbounds %struct.kjit_dim, ptr %30, i32 0, i32 0
  %85 = call i32 @llvm.amdgcn.workgroup.id.x()
  store i32 %85, ptr %84, align 4
  %86 = getelementptr inbounds %struct.kjit_dim, ptr %30, i32 0, i32 0
  %87 = load i32, ptr %86, align 4
  %88 = getelementptr inbounds %struct.kjit_dim, ptr %31, i32 0, i32 0
  store i32 256, ptr %88, align 4
  %89 = mul i32 %87, 256
  %90 = getelementptr inbounds %struct.kjit_dim, ptr %32, i32 0, i32 0
  %91 = call noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x()
  store i32 %91, ptr %90, align 4
  %92 = getelementptr inbounds %struct.kjit_dim, ptr %32, i32 0, i32 0
  %93 = load i32, ptr %92, align 4
  %94 = add i32 %89, %93
  %95 = zext i32 %94 to i64
  %96 = getelementptr inbounds float, ptr %83, i64 %95
  store float %82, ptr %96, align 4
  ret void
}

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.amdgcn.workitem.id.x() #1

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.amdgcn.workgroup.id.x() #1

; Function Attrs: convergent nocallback nofree nounwind willreturn
declare void @llvm.amdgcn.s.barrier() #2

attributes #0 = { convergent mustprogress noinline norecurse nounwind "amdgpu-flat-work-group-size"="1,256" "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="gfx90a" "target-features"="+16-bit-insts,+atomic-buffer-global-pk-add-f16-insts,+atomic-fadd-rtn-insts,+ci-insts,+dl-insts,+dot1-insts,+dot10-insts,+dot2-insts,+dot3-insts,+dot4-insts,+dot5-insts,+dot6-insts,+dot7-insts,+dpp,+gfx8-insts,+gfx9-insts,+gfx90a-insts,+mai-insts,+s-memrealtime,+s-memtime-inst,+wavefrontsize64" "uniform-work-group-size"="true" }
attributes #1 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { convergent nocallback nofree nounwind willreturn }

!llvm.module.flags = !{!0, !1, !2, !3, !4}
!llvm.ident = !{!5}

!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
!1 = !{i32 1, !"amdgpu_printf_kind", !"hostcall"}
!2 = !{i32 1, !"wchar_size", i32 4}
!3 = !{i32 8, !"PIC Level", i32 2}
!4 = !{i32 7, !"frame-pointer", i32 2}
!5 = !{!"Debian clang version 19.1.7 (3~deb12u1)"}
!6 = distinct !{!6, !7}
!7 = !{!"llvm.loop.mustprogress"}
!8 = distinct !{!8, !7}
