// kjit_bench_pipeline: where the time of an LLVM IR -> cubin compile goes, per
// stage of kjit's pipeline, and what the pipeline machinery (pass registry,
// plan, cache key, per-pass timing, metadata read, plugin passes) costs next
// to calling the same four backend functions directly. Prints tables; asserts
// nothing about timings. Exits 1 only when something fails outright, 2 on a
// bad argument.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "backends/llvm/llvm_module.h"
#include "backends/llvm/llvm_optimizer.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/nvjitlink/nvjitlink_stage.h"
#include "backends/ptx/ptx_retarget.h"
#include "bench_options.h"
#include "pipeline/compile_pipeline.h"
#include "sample_stats.h"
#include "support/llvm_kernels.h"
#include "target/target.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

constexpr int k_default_reps = 15;
constexpr int k_noop_passes = 8;
constexpr int k_key_calls = 200;
constexpr int k_hot_runs = 500;
constexpr std::string_view k_target = "cuda:90";
constexpr std::string_view k_opt_pipeline = "default<O3>";  // the default pipeline's llvm-passes.pipeline
const std::string k_noop_pipeline = "bench-noop-x8";
// PTX in, PTX out (the request asks for PTX, so nvjitlink never runs): the
// machinery with no compiler around it, run hot in a loop.
const std::string k_ptx_pipeline = "bench-ptx";
const std::string k_ptx_noop_pipeline = "bench-ptx-noop-x8";

// The stages of the default LLVM pipeline, in order, then the cubin read.
const std::vector<std::string> k_stages = {"llvm-opt", "llvm-nvptx", "ptx", "nvjitlink", "metadata"};
// The passes that do the bare path's work; whatever else a pipeline run
// spends (the cubin read included) is the machinery's.
const std::vector<std::string> k_backend_passes = {"llvm-passes", "nvptx-codegen", "ptx-retarget", "nvjitlink-link"};

struct IrKernel {
  std::string name;
  std::string what;
  std::string ir;
};

// An NVPTX module as the tests write theirs: header, globals, the special
// registers read, then the rest.
std::string module(const char* globals, std::initializer_list<const char*> special_registers, const char* rest) {
  return std::string("\n") + test::k_nvptx_header + globals + test::special_registers(special_registers) + rest;
}

// Written for this bench, unoptimized as a front end would hand it over, so
// that default<O3> has some work (the matmul's fixed 16-step inner loop to
// unroll, address arithmetic to hoist out of loops).
const std::vector<IrKernel>& ir_kernels() {
  static const std::vector<IrKernel> kernels{
      {"vector_add", "c[i] = a[i] + b[i], one element per thread", module("", {"tid.x", "ctaid.x", "ntid.x"}, R"(
define ptx_kernel void @vector_add(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i64 %n) {
entry:
  %thread = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %width = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %block, %width
  %i32 = add i32 %base, %thread
  %i = zext i32 %i32 to i64
  %in_range = icmp ult i64 %i, %n
  br i1 %in_range, label %work, label %done

work:
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i
  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %i
  %x = load float, ptr addrspace(1) %pa, align 4
  %y = load float, ptr addrspace(1) %pb, align 4
  %sum = fadd float %x, %y
  store float %sum, ptr addrspace(1) %pc, align 4
  br label %done

done:
  ret void
}
)")},
      {"saxpy_loop", "y = a*x + y, grid-stride loop", module("", {"tid.x", "ctaid.x", "ntid.x", "nctaid.x"}, R"(
define ptx_kernel void @saxpy_loop(i32 %n, float %alpha, ptr addrspace(1) noalias %x, ptr addrspace(1) noalias %y) {
entry:
  %thread = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %width = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %blocks = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %base = mul i32 %block, %width
  %first = add i32 %base, %thread
  %stride = mul i32 %width, %blocks
  br label %check

check:
  %i = phi i32 [ %first, %entry ], [ %next, %body ]
  %more = icmp slt i32 %i, %n
  br i1 %more, label %body, label %done

body:
  %index = sext i32 %i to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %index
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %index
  %vx = load float, ptr addrspace(1) %px, align 4
  %vy = load float, ptr addrspace(1) %py, align 4
  %scaled = fmul float %alpha, %vx
  %result = fadd float %scaled, %vy
  store float %result, ptr addrspace(1) %py, align 4
  %next = add nsw i32 %i, %stride
  br label %check

done:
  ret void
}
)")},
      {"block_sum", "tree reduction in addrspace(3) shared memory, barrier per step",
       module("@partial = internal addrspace(3) global [256 x float] undef, align 4\n\n", {"tid.x", "ctaid.x"},
              R"(declare void @llvm.nvvm.barrier0()

; Launched with 256 threads per block; out[block] = sum of the block's slice.
define ptx_kernel void @block_sum(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
entry:
  %thread = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = shl i32 %block, 8
  %i = add i32 %base, %thread
  %in_range = icmp slt i32 %i, %n
  br i1 %in_range, label %read, label %fill

read:
  %index = sext i32 %i to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %index
  %loaded = load float, ptr addrspace(1) %pin, align 4
  br label %fill

fill:
  %value = phi float [ %loaded, %read ], [ 0.0, %entry ]
  %mine = getelementptr inbounds [256 x float], ptr addrspace(3) @partial, i32 0, i32 %thread
  store float %value, ptr addrspace(3) %mine, align 4
  call void @llvm.nvvm.barrier0()
  br label %step

step:
  %half = phi i32 [ 128, %fill ], [ %half.next, %step_end ]
  %active = icmp ult i32 %thread, %half
  br i1 %active, label %combine, label %step_end

combine:
  %peer_index = add i32 %thread, %half
  %peer = getelementptr inbounds [256 x float], ptr addrspace(3) @partial, i32 0, i32 %peer_index
  %a = load float, ptr addrspace(3) %mine, align 4
  %b = load float, ptr addrspace(3) %peer, align 4
  %s = fadd float %a, %b
  store float %s, ptr addrspace(3) %mine, align 4
  br label %step_end

step_end:
  call void @llvm.nvvm.barrier0()
  %half.next = lshr i32 %half, 1
  %again = icmp ne i32 %half.next, 0
  br i1 %again, label %step, label %finish

finish:
  %leader = icmp eq i32 %thread, 0
  br i1 %leader, label %write, label %done

write:
  %total = load float, ptr addrspace(3) @partial, align 4
  %block64 = zext i32 %block to i64
  %pout = getelementptr inbounds float, ptr addrspace(1) %out, i64 %block64
  store float %total, ptr addrspace(1) %pout, align 4
  br label %done

done:
  ret void
}
)")},
      {"tiled_matmul", "C = A*B, 16x16 shared tiles, inner loop of 16 for O3 to unroll",
       module("@tile_a = internal addrspace(3) global [256 x float] undef, align 4\n"
              "@tile_b = internal addrspace(3) global [256 x float] undef, align 4\n\n",
              {"tid.x", "tid.y", "ctaid.x", "ctaid.y"}, R"(declare void @llvm.nvvm.barrier0()
declare float @llvm.fmuladd.f32(float, float, float)

; n x n row-major matrices, n a multiple of 16; 16x16 threads per block.
define ptx_kernel void @tiled_matmul(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i32 %n) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %row0 = shl i32 %by, 4
  %row = add i32 %row0, %ty
  %col0 = shl i32 %bx, 4
  %col = add i32 %col0, %tx
  %tiles = lshr i32 %n, 4
  %slot0 = shl i32 %ty, 4
  %slot = add i32 %slot0, %tx
  %a_slot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile_a, i32 0, i32 %slot
  %b_slot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile_b, i32 0, i32 %slot
  br label %tile_loop

tile_loop:
  %t = phi i32 [ 0, %entry ], [ %t.next, %tile_end ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %tile_end ]
  %more = icmp ult i32 %t, %tiles
  br i1 %more, label %load_tiles, label %store_result

load_tiles:
  %k0 = shl i32 %t, 4
  %a_col = add i32 %k0, %tx
  %a_row_start = mul i32 %row, %n
  %a_index = add i32 %a_row_start, %a_col
  %a_index64 = zext i32 %a_index to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %a_index64
  %va = load float, ptr addrspace(1) %pa, align 4
  store float %va, ptr addrspace(3) %a_slot, align 4
  %b_row = add i32 %k0, %ty
  %b_row_start = mul i32 %b_row, %n
  %b_index = add i32 %b_row_start, %col
  %b_index64 = zext i32 %b_index to i64
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %b_index64
  %vb = load float, ptr addrspace(1) %pb, align 4
  store float %vb, ptr addrspace(3) %b_slot, align 4
  call void @llvm.nvvm.barrier0()
  br label %dot

dot:
  %k = phi i32 [ 0, %load_tiles ], [ %k.next, %dot ]
  %sum = phi float [ %acc, %load_tiles ], [ %sum.next, %dot ]
  %ai = add i32 %slot0, %k
  %pai = getelementptr inbounds [256 x float], ptr addrspace(3) @tile_a, i32 0, i32 %ai
  %bi0 = shl i32 %k, 4
  %bi = add i32 %bi0, %tx
  %pbi = getelementptr inbounds [256 x float], ptr addrspace(3) @tile_b, i32 0, i32 %bi
  %x = load float, ptr addrspace(3) %pai, align 4
  %y = load float, ptr addrspace(3) %pbi, align 4
  %sum.next = call float @llvm.fmuladd.f32(float %x, float %y, float %sum)
  %k.next = add nuw nsw i32 %k, 1
  %k.done = icmp eq i32 %k.next, 16
  br i1 %k.done, label %tile_end, label %dot

tile_end:
  %acc.next = phi float [ %sum.next, %dot ]
  call void @llvm.nvvm.barrier0()
  %t.next = add i32 %t, 1
  br label %tile_loop

store_result:
  %c_row_start = mul i32 %row, %n
  %c_index = add i32 %c_row_start, %col
  %c_index64 = zext i32 %c_index to i64
  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %c_index64
  store float %acc, ptr addrspace(1) %pc, align 4
  ret void
}
)")},
  };
  return kernels;
}

using Clock = std::chrono::steady_clock;

// What the default LLVM pipeline hands each backend function for the target,
// worked out once, as builtin_passes.cpp works it out per request.
struct BareSetup {
  LlvmTarget llvm;
  std::string ptx_target;
  std::string ptx_min_version;
  std::vector<std::string> link_options;
  const NvJitLinkApi* nvjitlink = nullptr;
};

struct BareRun {
  double opt_ms = 0, codegen_ms = 0, retarget_ms = 0, link_ms = 0;
  std::string cubin;
};

// The floor: the four backend calls back to back, nothing around them.
Result<BareRun> run_bare(const BareSetup& setup, const IrKernel& kernel, const std::string& input_name) {
  BareRun run;
  auto start = Clock::now();
  LlvmOptimizeRequest request;
  request.ir = kernel.ir;
  request.name = input_name;
  request.pipeline = std::string(k_opt_pipeline);
  request.target = setup.llvm;
  Result<std::string> bitcode = run_llvm_passes(request);
  if (!bitcode) return bitcode.error();
  run.opt_ms = ms_since(start);

  start = Clock::now();
  Result<std::string> ptx = nvptx_codegen(*bitcode, input_name, setup.llvm);
  if (!ptx) return ptx.error();
  run.codegen_ms = ms_since(start);

  start = Clock::now();
  Result<std::string> retargeted = retarget_ptx(*ptx, setup.ptx_target, setup.ptx_min_version);
  if (!retargeted) return retargeted.error();
  run.retarget_ms = ms_since(start);

  start = Clock::now();
  Result<CubinOutput> cubin = link_ptx_to_cubin(*setup.nvjitlink, *retargeted, input_name, setup.link_options);
  if (!cubin) return cubin.error();
  run.link_ms = ms_since(start);
  run.cubin = std::move(cubin->cubin);
  return run;
}

// Everything measured for one kernel, one entry per repetition (noop_pass_ms:
// one per no-op pass that ran; hot_key_ms: one per key() call in a loop).
struct KernelSamples {
  std::vector<double> bare_ms, pipeline_ms, noop_ms;
  std::vector<double> bare_opt_ms, bare_codegen_ms, bare_retarget_ms, bare_link_ms;
  std::map<std::string, std::vector<double>> stage_ms;  // from the default pipeline's Artifact::timings
  std::vector<double> outside_stages_ms;                // pipeline wall minus all its stages
  // Wall minus the backend passes' own times, in the same run: the
  // machinery's cost without the compilers' run-to-run noise.
  std::vector<double> pipeline_machinery_ms, noop_machinery_ms;
  std::vector<double> noop_outside_stages_ms, noop_metadata_ms, noop_pass_ms;
  std::vector<double> cold_key_ms, hot_key_ms, noop_hot_key_ms;
  std::vector<double> hot_bare_ms, hot_pipeline_ms, hot_noop_ms;
  std::string ptx;  // nvptx_codegen's output, before retargeting
  size_t cubin_bytes = 0;
  bool same_cubin = true;
};

CompileJob job_for(const IrKernel& kernel, const Target& target, const std::string& pipeline) {
  CompileJob job;
  job.input_kind = InputKind::llvm_ir;
  job.input = kernel.ir;
  job.input_name = kernel.name + ".ll";
  job.target = target;
  job.pipeline = pipeline;
  return job;
}

double backend_pass_ms(const Artifact& artifact) {
  double sum = 0;
  for (const StageTiming& timing : artifact.timings)
    for (const PassTiming& pass : timing.passes)
      if (std::find(k_backend_passes.begin(), k_backend_passes.end(), pass.pass) != k_backend_passes.end())
        sum += pass.ms;
  return sum;
}

// The default LLVM pipeline with k_noop_passes "bench-noop" after
// ptx-retarget: (c) differs from (b) by those passes and nothing else.
Result<PipelineSpec> noop_pipeline_from(const CompilePipeline& plain) {
  Result<PipelineSpec> base = plain.effective_pipeline(InputKind::llvm_ir, "");
  if (!base) return base.error();
  PipelineSpec spec = *base;
  spec.name = k_noop_pipeline;
  for (StageSpec& stage : spec.stages)
    if (stage.name == "ptx") {
      stage.passes.insert(stage.passes.end(), k_noop_passes, "bench-noop");
      return spec;
    }
  return make_error(ErrorCode::internal, "the default LLVM pipeline has no 'ptx' stage");
}

// The PTX-in pipelines of the hot loop: the default LLVM pipeline's last two
// stages, with or without the no-op passes.
std::vector<PipelineSpec> ptx_pipelines_from(const PipelineSpec& noop) {
  PipelineSpec with_noop{k_ptx_noop_pipeline, {InputKind::ptx}, {}, {}};
  for (const StageSpec& stage : noop.stages)
    if (stage.takes == IrKind::ptx) with_noop.stages.push_back(stage);
  PipelineSpec without = with_noop;
  without.name = k_ptx_pipeline;
  for (StageSpec& stage : without.stages) std::erase(stage.passes, "bench-noop");
  return {without, with_noop};
}

// "llvm-opt[llvm-passes] -> ptx[ptx-retarget, bench-noop x8] -> ...".
std::string describe(const PipelineSpec& spec) {
  std::string out = spec.name + ": ";
  for (size_t s = 0; s < spec.stages.size(); ++s) {
    const StageSpec& stage = spec.stages[s];
    out += (s ? " -> " : "") + stage.name + "[";
    for (size_t p = 0; p < stage.passes.size();) {
      size_t same = p;
      while (same < stage.passes.size() && stage.passes[same] == stage.passes[p]) ++same;
      out += (p ? ", " : "") + stage.passes[p];
      if (same - p > 1) out += " x" + std::to_string(same - p);
      p = same;
    }
    out += "]";
  }
  return out;
}

struct Pipelines {
  const CompilePipeline* plain;
  const CompilePipeline* with_noop;
};

// One compile each way before measuring: the first LLVM and nvJitLink calls in
// a process initialise them. Also checks that the three ways agree on the
// cubin, i.e. that they did the same work.
Status warm_up(const BareSetup& bare, Pipelines pipelines, const IrKernel& kernel, const Target& target,
               KernelSamples& samples) {
  Result<BareRun> direct = run_bare(bare, kernel, kernel.name + ".ll");
  if (!direct) return in_context("bare stages for " + kernel.name, direct.error());
  Result<Artifact> plain = pipelines.plain->run(job_for(kernel, target, ""));
  if (!plain) return in_context("default pipeline for " + kernel.name, plain.error());
  Result<Artifact> noop = pipelines.with_noop->run(job_for(kernel, target, k_noop_pipeline));
  if (!noop) return in_context(k_noop_pipeline + " for " + kernel.name, noop.error());
  samples.same_cubin = direct->cubin == plain->bytes && plain->bytes == noop->bytes;
  samples.cubin_bytes = plain->bytes.size();

  // The PTX the "ptx" stage receives: what each no-op pass copies, and the
  // input of the hot loop.
  LlvmOptimizeRequest request;
  request.ir = kernel.ir;
  request.name = kernel.name + ".ll";
  request.target = bare.llvm;
  Result<std::string> bitcode = run_llvm_passes(request);
  if (!bitcode) return bitcode.error();
  Result<std::string> ptx = nvptx_codegen(*bitcode, kernel.name + ".ll", bare.llvm);
  if (!ptx) return ptx.error();
  samples.ptx = std::move(*ptx);
  return Ok{};
}

// One repetition: the three ways in a rotating order, so that drift on the
// host (other builds, frequency) lands on each alike.
Status measure_rep(const BareSetup& bare, Pipelines pipelines, const IrKernel& kernel, const Target& target, int rep,
                   KernelSamples& samples) {
  const CompileJob plain_job = job_for(kernel, target, "");
  const CompileJob noop_job = job_for(kernel, target, k_noop_pipeline);
  for (int slot = 0; slot < 3; ++slot) {
    int way = (slot + rep) % 3;
    auto start = Clock::now();
    if (way == 0) {
      Result<BareRun> run = run_bare(bare, kernel, plain_job.input_name);
      double ms = ms_since(start);
      if (!run) return in_context("bare stages for " + kernel.name, run.error());
      samples.bare_ms.push_back(ms);
      samples.bare_opt_ms.push_back(run->opt_ms);
      samples.bare_codegen_ms.push_back(run->codegen_ms);
      samples.bare_retarget_ms.push_back(run->retarget_ms);
      samples.bare_link_ms.push_back(run->link_ms);
      // key() right after a compile has evicted the caches, as when a request
      // follows another; measure_key's loop gives the same call hot.
      auto key_start = Clock::now();
      Result<CacheKey> key = pipelines.plain->key(plain_job);
      double key_ms = ms_since(key_start);
      if (!key) return in_context("key for " + kernel.name, key.error());
      samples.cold_key_ms.push_back(key_ms);
    } else if (way == 1) {
      Result<Artifact> artifact = pipelines.plain->run(plain_job);
      double ms = ms_since(start);
      if (!artifact) return in_context("default pipeline for " + kernel.name, artifact.error());
      samples.pipeline_ms.push_back(ms);
      double in_stages = 0;
      for (const StageTiming& timing : artifact->timings) {
        samples.stage_ms[timing.stage].push_back(timing.ms);
        in_stages += timing.ms;
      }
      samples.outside_stages_ms.push_back(ms - in_stages);
      samples.pipeline_machinery_ms.push_back(ms - backend_pass_ms(*artifact));
    } else {
      Result<Artifact> artifact = pipelines.with_noop->run(noop_job);
      double ms = ms_since(start);
      if (!artifact) return in_context(k_noop_pipeline + " for " + kernel.name, artifact.error());
      samples.noop_ms.push_back(ms);
      samples.noop_machinery_ms.push_back(ms - backend_pass_ms(*artifact));
      double in_stages = 0;
      for (const StageTiming& timing : artifact->timings) {
        in_stages += timing.ms;
        if (timing.stage == "metadata") samples.noop_metadata_ms.push_back(timing.ms);
      }
      samples.noop_outside_stages_ms.push_back(ms - in_stages);
      for (const StageTiming& timing : artifact->timings)
        for (const PassTiming& pass : timing.passes)
          if (pass.pass == "bench-noop") samples.noop_pass_ms.push_back(pass.ms);
    }
  }
  return Ok{};
}

// Planning alone (effective pipeline, pass arguments, SHA-256 cache key),
// which CompilePipeline::run does before the first pass: no compiler runs.
Status measure_key(Pipelines pipelines, const IrKernel& kernel, const Target& target, KernelSamples& samples) {
  const CompileJob plain_job = job_for(kernel, target, "");
  const CompileJob noop_job = job_for(kernel, target, k_noop_pipeline);
  for (int i = 0; i < k_key_calls; ++i) {
    auto start = Clock::now();
    Result<CacheKey> key = pipelines.plain->key(plain_job);
    samples.hot_key_ms.push_back(ms_since(start));
    if (!key) return in_context("key for " + kernel.name, key.error());
    start = Clock::now();
    key = pipelines.with_noop->key(noop_job);
    samples.noop_hot_key_ms.push_back(ms_since(start));
    if (!key) return in_context("key with " + k_noop_pipeline + " for " + kernel.name, key.error());
  }
  return Ok{};
}

// The machinery hot, without compilers: retarget_ptx alone vs the same pass
// through CompilePipeline::run, with and without the no-op passes. Checks
// that all three give the same PTX.
Status measure_hot(Pipelines pipelines, const BareSetup& bare, const IrKernel& kernel, const Target& target,
                   KernelSamples& samples) {
  CompileJob plain_job = job_for(kernel, target, k_ptx_pipeline);
  plain_job.input_kind = InputKind::ptx;
  plain_job.input = samples.ptx;
  plain_job.input_name = kernel.name + ".ptx";
  plain_job.wanted = ArtifactKind::ptx;
  CompileJob noop_job = plain_job;
  noop_job.pipeline = k_ptx_noop_pipeline;
  Result<std::string> expected = retarget_ptx(samples.ptx, bare.ptx_target, bare.ptx_min_version);
  if (!expected) return expected.error();
  for (int i = 0; i < k_hot_runs; ++i) {
    for (int slot = 0; slot < 3; ++slot) {
      int way = (slot + i) % 3;
      auto start = Clock::now();
      if (way == 0) {
        Result<std::string> out = retarget_ptx(samples.ptx, bare.ptx_target, bare.ptx_min_version);
        samples.hot_bare_ms.push_back(ms_since(start));
        if (!out) return out.error();
        continue;
      }
      const CompileJob& job = way == 1 ? plain_job : noop_job;
      Result<Artifact> out = pipelines.with_noop->run(job);
      (way == 1 ? samples.hot_pipeline_ms : samples.hot_noop_ms).push_back(ms_since(start));
      if (!out) return in_context(job.pipeline + " for " + kernel.name, out.error());
      if (out->bytes != *expected)
        return make_error(ErrorCode::internal,
                          job.pipeline + " for " + kernel.name + " gave other PTX than retarget_ptx");
    }
  }
  return Ok{};
}

std::string percent(double part, double whole) {
  return whole > 0 ? fixed(100.0 * part / whole, 1) + "%" : "-";
}

void print_stage_tables(const std::vector<IrKernel>& kernels, const std::vector<KernelSamples>& samples, int reps) {
  std::printf(
      "\n== Per stage, LLVM IR -> cubin through CompilePipeline::run (default pipeline): median of %d reps (ms) ==\n",
      reps);
  std::printf("(bare: the same backend function called directly, from the bare-stages runs)\n");
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    std::printf("\n%s: %s (IR %zu B, PTX %zu B, cubin %zu B)\n", kernels[k].name.c_str(), kernels[k].what.c_str(),
                kernels[k].ir.size(), s.ptx.size(), s.cubin_bytes);
    const std::map<std::string, std::pair<std::string, const std::vector<double>*>> bare_of = {
        {"llvm-opt", {"llvm-passes", &s.bare_opt_ms}},  {"llvm-nvptx", {"nvptx-codegen", &s.bare_codegen_ms}},
        {"ptx", {"ptx-retarget", &s.bare_retarget_ms}}, {"nvjitlink", {"nvjitlink-link", &s.bare_link_ms}},
        {"metadata", {"cubin-reader", nullptr}},
    };
    double total = median(s.pipeline_ms);
    TextTable table({"stage", "pass", "pipeline", "share", "bare"});
    for (const std::string& stage : k_stages) {
      auto found = s.stage_ms.find(stage);
      double ms = found == s.stage_ms.end() ? 0 : median(found->second);
      const auto& [pass, bare] = bare_of.at(stage);
      int decimals = ms < 0.1 ? 3 : 2;
      table.add_row(
          {stage, pass, fixed(ms, decimals), percent(ms, total), bare ? fixed(median(*bare), decimals) : "-"});
    }
    double outside = median(s.outside_stages_ms);
    table.add_row({"outside stages", "plan, key, artifact", fixed(outside, 3), percent(outside, total), "-"});
    table.add_row({"total (wall)", "", fixed(total, 2), "100.0%", fixed(median(s.bare_ms), 2)});
    table.print();
  }
}

void print_overhead_tables(const std::vector<IrKernel>& kernels, const std::vector<KernelSamples>& samples, int reps) {
  std::printf("\n== Pipeline machinery vs bare stages: median of %d reps (ms), ways interleaved per rep ==\n", reps);
  std::printf(
      "(a, b, c: wall time of one compile; mb, mc: b's and c's wall minus their four backend passes'\n"
      " own times, same run, so free of the compilers' run-to-run noise)\n");
  TextTable table({"kernel", "a: bare", "b: pipeline", "c: +8 no-op", "b/a", "c/a", "mb", "mc", "(a+mb)/a", "(a+mc)/a",
                   "same cubin"});
  std::vector<double> wall_b, wall_c, machinery_b, machinery_c, per_pass_wall_us, per_pass_machinery_us;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    double a = median(s.bare_ms), b = median(s.pipeline_ms), c = median(s.noop_ms);
    double mb = median(s.pipeline_machinery_ms), mc = median(s.noop_machinery_ms);
    wall_b.push_back(b / a);
    wall_c.push_back(c / a);
    machinery_b.push_back((a + mb) / a);
    machinery_c.push_back((a + mc) / a);
    per_pass_wall_us.push_back((c - b) / k_noop_passes * 1000.0);
    per_pass_machinery_us.push_back((mc - mb) / k_noop_passes * 1000.0);
    table.add_row({kernels[k].name, fixed(a), fixed(b), fixed(c), fixed(b / a, 3), fixed(c / a, 3), fixed(mb, 3),
                   fixed(mc, 3), fixed(machinery_b.back(), 4), fixed(machinery_c.back(), 4),
                   s.same_cubin ? "yes" : "NO"});
  }
  table.print();
  std::printf("\noverall median across kernels, wall:           b/a = %.3f   c/a = %.3f\n", median(wall_b),
              median(wall_c));
  std::printf("overall median across kernels, machinery only: b/a = %.4f  c/a = %.4f\n", median(machinery_b),
              median(machinery_c));

  std::printf("\n== Where mb goes: medians (ms) ==\n");
  TextTable where({"kernel", "mb", "metadata", "stage loop", "outside stages", "key() cold", "key() hot"});
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    double mb = median(s.pipeline_machinery_ms), metadata = median(s.stage_ms.at("metadata"));
    double outside = median(s.outside_stages_ms);
    where.add_row({kernels[k].name, fixed(mb, 3), fixed(metadata, 3), fixed(mb - metadata - outside, 3),
                   fixed(outside, 3), fixed(median(s.cold_key_ms), 3), fixed(median(s.hot_key_ms), 3)});
  }
  where.print();

  std::printf("\n== One no-op plugin pass (bench-noop: copies the PTX through write_ir), microseconds ==\n");
  std::printf(
      "((mc-mb)/8 split: in stages = the runner's per-pass work and the pass; outside stages = planning,\n"
      " key and result; key() hot = the key's share of that, measured in a loop)\n");
  TextTable noop({"kernel", "PTX bytes", "(c-b)/8 wall", "(mc-mb)/8", "in stages", "outside stages", "key() hot",
                  "pass as timed"});
  auto per_pass_us = [](double c_ms, double b_ms) { return fixed((c_ms - b_ms) / k_noop_passes * 1000.0, 2); };
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    double outside_b = median(s.outside_stages_ms), outside_c = median(s.noop_outside_stages_ms);
    double in_stages_b = median(s.pipeline_machinery_ms) - outside_b - median(s.stage_ms.at("metadata"));
    double in_stages_c = median(s.noop_machinery_ms) - outside_c - median(s.noop_metadata_ms);
    noop.add_row({kernels[k].name, std::to_string(s.ptx.size()), fixed(per_pass_wall_us[k], 1),
                  fixed(per_pass_machinery_us[k], 2), per_pass_us(in_stages_c, in_stages_b),
                  per_pass_us(outside_c, outside_b), per_pass_us(median(s.noop_hot_key_ms), median(s.hot_key_ms)),
                  fixed(median(s.noop_pass_ms) * 1000.0, 2)});
  }
  noop.print();
  std::printf("\nper no-op pass, median across kernels: (c-b)/8 = %.1f us (wall), (mc-mb)/8 = %.2f us (machinery)\n",
              median(per_pass_wall_us), median(per_pass_machinery_us));

  std::printf("\n== The machinery hot, no compiler: PTX in -> PTX out, median of %d runs each (us) ==\n", k_hot_runs);
  std::printf("(bare: retarget_ptx; pipeline: %s = ptx[ptx-retarget], asking for PTX; +8: %s)\n",
              k_ptx_pipeline.c_str(), k_ptx_noop_pipeline.c_str());
  TextTable hot({"kernel", "bare", "pipeline", "+8 no-op", "pipeline-bare", "per no-op pass"});
  std::vector<double> hot_fixed_us, hot_per_pass_us;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelSamples& s = samples[k];
    double a = median(s.hot_bare_ms) * 1000.0, b = median(s.hot_pipeline_ms) * 1000.0;
    double c = median(s.hot_noop_ms) * 1000.0;
    hot_fixed_us.push_back(b - a);
    hot_per_pass_us.push_back((c - b) / k_noop_passes);
    hot.add_row({kernels[k].name, fixed(a), fixed(b), fixed(c), fixed(b - a), fixed(hot_per_pass_us.back())});
  }
  hot.print();
  std::printf("\nhot, median across kernels: pipeline around one pass %.1f us, each no-op pass %.2f us\n",
              median(hot_fixed_us), median(hot_per_pass_us));
}

Status run_bench(const BenchOptions& options) {
  auto bench_start = Clock::now();
  Result<Target> target = parse_target(k_target);
  if (!target) return target.error();

  std::shared_ptr<const CudaToolkit> toolkit = CudaToolkit::load();
  Result<const NvJitLinkApi*> nvjitlink = toolkit->nvjitlink();
  if (!nvjitlink) return in_context("nvJitLink", nvjitlink.error());

  LlvmCodegenPlan plan = llvm_codegen_plan(*target);
  BareSetup bare;
  bare.llvm = LlvmTarget{"nvptx64-nvidia-cuda", plan.cpu, plan.features};
  bare.ptx_target = plan.ptx_target;
  bare.ptx_min_version = plan.ptx_min_version;
  bare.link_options = {"-arch=" + target->sm_name()};
  bare.nvjitlink = *nvjitlink;

  // Through create(), as the daemon makes its own: it resolves the pipelines
  // that run() then looks up.
  Result<std::shared_ptr<const CompilePipeline>> created = CompilePipeline::create(toolkit, {});
  if (!created) return in_context("the default pipelines", created.error());
  const CompilePipeline& plain = **created;
  Result<PipelineSpec> noop_spec = noop_pipeline_from(plain);
  if (!noop_spec) return noop_spec.error();
  PipelineSetup setup;
  setup.plugin_paths = {KJIT_BENCH_NOOP_PLUGIN};
  setup.config.pipelines = ptx_pipelines_from(*noop_spec);
  setup.config.pipelines.push_back(*noop_spec);
  Result<std::shared_ptr<const CompilePipeline>> with_noop = CompilePipeline::create(toolkit, setup);
  if (!with_noop) return in_context("pipeline with the bench-noop plugin", with_noop.error());
  Result<PipelineSpec> plain_effective = plain.effective_pipeline(InputKind::llvm_ir, "");
  Result<PipelineSpec> noop_effective = (*with_noop)->effective_pipeline(InputKind::llvm_ir, k_noop_pipeline);
  if (!plain_effective) return plain_effective.error();
  if (!noop_effective) return noop_effective.error();

  std::printf("kjit_bench_pipeline: LLVM IR -> cubin, kjit's pipeline vs the bare backend calls, in one process\n");
  std::printf("toolkit: %s  nvJitLink %s; LLVM %s; target %s (LLVM cpu %s %s, PTX .target %s, -arch=%s)\n",
              toolkit->home().c_str(), toolkit->version().c_str(), llvm_version().c_str(), target->canonical().c_str(),
              plan.cpu.c_str(), plan.features.c_str(), plan.ptx_target.c_str(), target->sm_name().c_str());
  std::printf("a: bare      run_llvm_passes(%s) -> nvptx_codegen -> retarget_ptx -> link_ptx_to_cubin\n",
              std::string(k_opt_pipeline).c_str());
  std::printf("b: pipeline  %s\n", describe(*plain_effective).c_str());
  std::printf("c: +8 no-op  %s\n", describe(*noop_effective).c_str());
  std::printf("reps: %d per kernel and way, order rotating per rep, after one warm-up each; host CPUs: %ld\n",
              options.reps, sysconf(_SC_NPROCESSORS_ONLN));

  const std::vector<IrKernel>& kernels = ir_kernels();
  std::vector<KernelSamples> samples(kernels.size());
  Pipelines pipelines{&plain, with_noop->get()};
  for (size_t k = 0; k < kernels.size(); ++k)
    if (Status s = warm_up(bare, pipelines, kernels[k], *target, samples[k]); !s) return s.error();
  // Kernel-major: each kernel's reps run back to back, rotating the ways.
  for (size_t k = 0; k < kernels.size(); ++k) {
    for (int rep = 0; rep < options.reps; ++rep)
      if (Status s = measure_rep(bare, pipelines, kernels[k], *target, rep, samples[k]); !s) return s.error();
    if (Status s = measure_key(pipelines, kernels[k], *target, samples[k]); !s) return s.error();
    if (Status s = measure_hot(pipelines, bare, kernels[k], *target, samples[k]); !s) return s.error();
  }

  print_stage_tables(kernels, samples, options.reps);
  print_overhead_tables(kernels, samples, options.reps);
  std::printf("\nbench took %.1f s\n", ms_since(bench_start) / 1000.0);
  return Ok{};
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  return kjit::bench::bench_main(
      argc, argv, "kjit_bench_pipeline",
      "Compiles LLVM IR kernels to sm_90 cubins in-process three ways (the backend functions called directly, kjit's "
      "default pipeline, and that pipeline with no-op plugin passes) and prints per-stage times and the pipeline's "
      "overhead.",
      kjit::bench::k_default_reps, kjit::bench::run_bench);
}
