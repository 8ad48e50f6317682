#include "pipeline/default_pipelines.h"

namespace kjit {

// NVIDIA pipelines, then AMD's. Stage: name, takes, gives, passes. Pass arguments default
// here and can be set per request ("llvm-passes.pipeline=default<O2>").
const std::vector<PipelineSpec>& default_pipelines() {
  static const std::vector<PipelineSpec> pipelines{
      {"cuda-nvidia",
       {InputKind::cuda_source},
       {
           {"nvrtc", IrKind::cuda_source, IrKind::ptx, {"nvrtc-compile"}},
           {"nvjitlink", IrKind::ptx, IrKind::cubin, {"nvjitlink-link"}},
       },
       {}},
      {"ptx-nvidia",
       {InputKind::ptx},
       {
           {"nvjitlink", IrKind::ptx, IrKind::cubin, {"nvjitlink-link"}},
       },
       {}},
      {"llvm-nvidia",
       {InputKind::llvm_ir, InputKind::llvm_bitcode},
       {
           // libdevice is linked and reflected on before the optimizer, as
           // clang does, so what it does not need is gone by then.
           {"llvm-opt", IrKind::llvm, IrKind::llvm, {"libdevice-link", "nvvm-reflect", "llvm-passes"}},
           {"llvm-nvptx", IrKind::llvm, IrKind::ptx, {"nvptx-codegen"}},
           {"ptx", IrKind::ptx, IrKind::ptx, {"ptx-retarget"}},
           {"nvjitlink", IrKind::ptx, IrKind::cubin, {"nvjitlink-link"}},
       },
       {{"llvm-passes.pipeline", "default<O3>"}}},
      // Tile IR bytecode: tileiras runs its own optimizer and ptxas, so the
      // one pass goes straight to the cubin (no PTX to stop at).
      {"tileir-cubin",
       {InputKind::tileir},
       {
           {"tileiras", IrKind::tileir, IrKind::cubin, {"tileiras-assemble"}},
       },
       {}},
      // Triton IR: the chosen Triton build runs its own stages (TTIR, TTGIR,
      // LLIR, PTX, cubin) in a Triton worker; their times come back as the
      // pass's log and the artifact's Triton metadata.
      {"triton-nvidia",
       {InputKind::triton},
       {
           {"triton", IrKind::triton, IrKind::cubin, {"triton-compile"}},
       },
       {}},
      // AMD pipelines: code objects for hip: targets.
      {"hip-amdgpu",
       {InputKind::hip_source},
       {
           {"hiprtc", IrKind::hip_source, IrKind::hsaco, {"hiprtc-compile"}},
       },
       {}},
      {"llvm-amdgpu",
       {InputKind::llvm_ir, InputKind::llvm_bitcode},
       {
           {"llvm-opt", IrKind::llvm, IrKind::llvm, {"llvm-passes"}},
           {"llvm-amdgpu", IrKind::llvm, IrKind::amdgcn_object, {"amdgpu-codegen"}},
           {"lld", IrKind::amdgcn_object, IrKind::hsaco, {"lld-link"}},
       },
       {{"llvm-passes.pipeline", "default<O3>"}}},
      {"triton-amd",
       {InputKind::triton},
       {
           {"triton", IrKind::triton, IrKind::hsaco, {"triton-compile-amd"}},
       },
       {}},
  };
  return pipelines;
}

const PipelineSpec* default_pipeline_for(InputKind input, Vendor vendor) {
  for (const PipelineSpec& p : default_pipelines())
    if (vendor_of(p) == vendor)
      for (InputKind i : p.inputs)
        if (i == input) return &p;
  return nullptr;
}

}  // namespace kjit
