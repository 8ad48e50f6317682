// LLVM IR kernels the tests compile, the request for one, and the pieces
// of an NVPTX module the benchmarks' kernels share.
#pragma once

#include <initializer_list>
#include <string>

#include "kjit/client.h"

namespace kjit::test {

// The first lines of every NVPTX module here.
inline constexpr const char* k_nvptx_header =
    "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n\n";

// The declarations of the special registers a kernel reads ("tid.x", ...).
inline std::string special_registers(std::initializer_list<const char*> names) {
  std::string declarations;
  for (const char* name : names) declarations += "declare i32 @llvm.nvvm.read.ptx.sreg." + std::string(name) + "()\n";
  return declarations;
}

inline const std::string k_llvm_vadd = k_nvptx_header + special_registers({"tid.x", "ctaid.x", "ntid.x"}) + R"(
define ptx_kernel void @vadd(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %t = mul i32 %bid, %bdim
  %i = add i32 %t, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %idx = sext i32 %i to i64
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %idx
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %idx
  %pc = getelementptr float, ptr addrspace(1) %c, i64 %idx
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %s = fadd float %va, %vb
  store float %s, ptr addrspace(1) %pc
  br label %exit
exit:
  ret void
}
)";

// The same kernel with line-table debug info; k_llvm_scale_moved differs
// only in its debug locations.
inline constexpr const char* k_llvm_scale_dbg = R"(target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @scale(ptr addrspace(1) %x, float %f) !dbg !5 {
entry:
  %v = load float, ptr addrspace(1) %x, align 4, !dbg !8
  %m = fmul float %v, %f, !dbg !9
  store float %m, ptr addrspace(1) %x, align 4, !dbg !9
  ret void, !dbg !10
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3}

!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus, file: !1, producer: "kjit test", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "scale.cu", directory: "/src")
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !{i32 7, !"Dwarf Version", i32 2}
!4 = !DISubroutineType(types: !{})
!5 = distinct !DISubprogram(name: "scale", scope: !1, file: !1, line: 3, type: !4, scopeLine: 3, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!8 = !DILocation(line: 4, column: 3, scope: !5)
!9 = !DILocation(line: 5, column: 3, scope: !5)
!10 = !DILocation(line: 6, column: 1, scope: !5)
)";

inline std::string k_llvm_scale_moved() {
  std::string ir = k_llvm_scale_dbg;
  for (auto [from, to] : {std::pair<std::string, std::string>{"line: 4, column: 3", "line: 14, column: 7"},
                          {"line: 5, column: 3", "line: 15, column: 9"}})
    ir.replace(ir.find(from), from.size(), to);
  return ir;
}

inline CompileRequest llvm_request(const std::string& ir, const std::string& target) {
  CompileRequest r;
  r.input_kind = InputKind::llvm_ir;
  r.input = ir;
  r.input_name = "kernel.ll";
  r.target = target;
  return r;
}

}  // namespace kjit::test
