// kjit_bench_libdevice: what libdevice costs the LLVM path, and how kjit's
// LLVM path compares with clang for a kernel calling libdevice math.
//
//   1. The same CUDA kernel (sinf and expf through libdevice), for sm_90:
//      clang-19 -x cuda --cuda-device-only (links libdevice, optimizes,
//      writes PTX) + nvJitLink, against kjit given the IR clang's front end
//      writes for it (-Xclang -disable-llvm-passes, libdevice not linked),
//      through a kjitd with --no-cache, and in this process; and clang-19
//      given that same IR (-mlink-builtin-bitcode libdevice) + nvJitLink.
//   2. One math call: a kernel calling __nv_sinf against the same kernel
//      with an fmul in its place, in this process; and the libdevice-link
//      pass's own time.
// Ways are interleaved, rep by rep. Prints medians; asserts nothing about
// timings. Exits 1 when something fails outright, 2 on a bad argument.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "backends/nvjitlink/nvjitlink_stage.h"
#include "kjit/client.h"
#include "pipeline/compile_pipeline.h"
#include "support/child_process.h"
#include "support/daemon_process.h"

namespace kjit::bench {
namespace {

namespace fs = std::filesystem;

// clang 19 with CUDA 13's headers fails (one it wants is gone), so the
// kernel declares what it uses itself: -nocudainc.
constexpr const char* k_cuda_source = R"(#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
extern "C" __device__ float __nv_sinf(float);
extern "C" __device__ float __nv_expf(float);
extern "C" __global__ void wave(float* p, int n) {
  int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
  if (i < n) p[i] = __nv_sinf(p[i]) * __nv_expf(p[i]);
}
)";

// One math call, or an fmul where it was.
std::string one_call_kernel(bool libdevice) {
  return std::string(R"(target triple = "nvptx64-nvidia-cuda"
declare float @__nv_sinf(float)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define ptx_kernel void @k(ptr addrspace(1) %p) {
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %q = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %q
)") + (libdevice ? "  %r = call float @__nv_sinf(float %v)\n" : "  %r = fmul float %v, %v\n") +
         "  store float %r, ptr addrspace(1) %q\n  ret void\n}\n";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double pass_ms(const std::vector<StageTiming>& timings, const std::string& pass) {
  for (const StageTiming& stage : timings)
    for (const PassTiming& p : stage.passes)
      if (p.pass == pass) return p.ms;
  return 0;
}

Status fail(const std::string& what, const Error& error) {
  return make_error(error.code, what + ": " + error.message, error.log);
}

Status run(int reps) {
  const std::string cuda_home = test::cuda_home();
  const std::string clang = "/usr/bin/clang-19";
  if (!fs::exists(clang)) return make_error(ErrorCode::failed_precondition, "no " + clang);
  auto dir = test::make_temp_dir("kjit-bench-libdevice-");
  if (!dir) return dir.error();
  const std::string source = *dir + "/wave.cu", ir = *dir + "/wave.ll", ptx = *dir + "/wave.ptx";
  std::ofstream(source) << k_cuda_source;
  const std::vector<std::string> clang_common{clang,
                                              "-x",
                                              "cuda",
                                              "--cuda-device-only",
                                              "-nocudainc",
                                              "--cuda-path=" + cuda_home,
                                              "--cuda-gpu-arch=sm_90",
                                              "-O3",
                                              "-Wno-unknown-cuda-version",
                                              "-S"};
  // What a front end hands kjit: clang's IR before any LLVM pass.
  std::vector<std::string> emit_ir = clang_common;
  emit_ir.insert(emit_ir.end(), {"-nocudalib", "-Xclang", "-disable-llvm-passes", "-emit-llvm", source, "-o", ir});
  if (test::CommandResult r = test::run_command(emit_ir); r.exit_code != 0)
    return make_error(ErrorCode::failed_precondition, "clang-19 could not write the IR: " + r.err);
  std::vector<std::string> to_ptx = clang_common;
  to_ptx.insert(to_ptx.end(), {source, "-o", ptx});
  // clang on the IR kjit gets, linking libdevice as its CUDA driver does.
  const std::string ir_ptx = *dir + "/wave-ir.ptx";
  const std::vector<std::string> ir_to_ptx{clang, "--target=nvptx64-nvidia-cuda", "-march=sm_90", "-O3", "-S", ir,
                                           "-Xclang", "-mlink-builtin-bitcode", "-Xclang",
                                           cuda_home + "/nvvm/libdevice/libdevice.10.bc", "-o", ir_ptx};

  auto toolkit = CudaToolkit::load(cuda_home);
  auto nvjitlink = toolkit->nvjitlink();
  if (!nvjitlink) return nvjitlink.error();
  auto pipeline = CompilePipeline::create(toolkit, {});
  if (!pipeline) return pipeline.error();
  auto daemon = test::DaemonProcess::start({{"--no-cache", "--compile-workers", "1"}});
  if (!daemon) return daemon.error();
  Client client((*daemon)->socket_path());

  CompileJob job;
  job.input_kind = InputKind::llvm_ir;
  job.input = test::read_file(ir);
  job.input_name = "wave.ll";
  job.target = *parse_target("cuda:90");
  CompileRequest request;
  request.input_kind = InputKind::llvm_ir;
  request.input = job.input;
  request.input_name = job.input_name;
  request.target = "cuda:90";

  std::vector<double> clang_ms, clang_link_ms, clang_ir_ms, daemon_ms, in_process_ms, link_pass_ms;
  for (int rep = 0; rep < reps + 1; ++rep) {  // the first of each way warms up
    auto start = std::chrono::steady_clock::now();
    if (test::CommandResult r = test::run_command(to_ptx); r.exit_code != 0)
      return make_error(ErrorCode::internal, "clang-19 failed: " + r.err);
    double clang_only = ms_since(start);
    auto linked = link_ptx_to_cubin(**nvjitlink, test::read_file(ptx), "wave.ptx", {"-arch=sm_90"});
    if (!linked) return fail("nvJitLink on clang's PTX", linked.error());
    double clang_total = ms_since(start);

    start = std::chrono::steady_clock::now();
    if (test::CommandResult r = test::run_command(ir_to_ptx); r.exit_code != 0)
      return make_error(ErrorCode::internal, "clang-19 on the IR failed: " + r.err);
    auto ir_linked = link_ptx_to_cubin(**nvjitlink, test::read_file(ir_ptx), "wave-ir.ptx", {"-arch=sm_90"});
    if (!ir_linked) return fail("nvJitLink on clang's PTX from the IR", ir_linked.error());
    double clang_ir_total = ms_since(start);

    start = std::chrono::steady_clock::now();
    auto answer = client.compile(request);
    if (!answer) return fail("kjitd", answer.error());
    double daemon_total = ms_since(start);

    start = std::chrono::steady_clock::now();
    auto artifact = (*pipeline)->run(job);
    if (!artifact) return fail("the pipeline", artifact.error());
    double in_process = ms_since(start);
    if (rep == 0) continue;
    clang_ms.push_back(clang_total);
    clang_link_ms.push_back(clang_total - clang_only);
    clang_ir_ms.push_back(clang_ir_total);
    daemon_ms.push_back(daemon_total);
    in_process_ms.push_back(in_process);
    link_pass_ms.push_back(pass_ms(artifact->timings, "libdevice-link"));
  }
  std::printf("A kernel calling sinf and expf through libdevice, sm_90, median of %d (ms)\n\n", reps);
  std::printf("  clang-19 -x cuda --cuda-device-only -S, then nvJitLink  %8.1f  (nvJitLink %.1f)\n", median(clang_ms),
              median(clang_link_ms));
  std::printf("  clang-19 on clang's IR (-mlink-builtin-bitcode), nvJitLink %5.1f\n", median(clang_ir_ms));
  std::printf("  kjitd --no-cache, client-side, from clang's IR          %8.1f\n", median(daemon_ms));
  std::printf("  kjit's pipeline in this process, from clang's IR        %8.1f  (libdevice-link %.1f)\n",
              median(in_process_ms), median(link_pass_ms));
  std::printf("  ratio kjitd / clang+nvJitLink                           %8.2f\n\n",
              median(daemon_ms) / median(clang_ms));

  CompileJob with = job, without = job;
  with.input = one_call_kernel(true);
  without.input = one_call_kernel(false);
  std::vector<double> with_ms, without_ms, pass, opt_with, opt_without;
  for (int rep = 0; rep < reps + 1; ++rep) {
    auto start = std::chrono::steady_clock::now();
    auto a = (*pipeline)->run(with);
    if (!a) return fail("one call", a.error());
    double a_ms = ms_since(start);
    start = std::chrono::steady_clock::now();
    auto b = (*pipeline)->run(without);
    if (!b) return fail("no call", b.error());
    double b_ms = ms_since(start);
    if (rep == 0) continue;
    with_ms.push_back(a_ms);
    without_ms.push_back(b_ms);
    pass.push_back(pass_ms(a->timings, "libdevice-link") + pass_ms(a->timings, "nvvm-reflect"));
    opt_with.push_back(pass_ms(a->timings, "llvm-passes") + pass_ms(a->timings, "nvptx-codegen") +
                       pass_ms(a->timings, "nvjitlink-link"));
    opt_without.push_back(pass_ms(b->timings, "llvm-passes") + pass_ms(b->timings, "nvptx-codegen") +
                          pass_ms(b->timings, "nvjitlink-link"));
  }
  std::printf("One math call: __nv_sinf against an fmul, in this process, median of %d (ms)\n\n", reps);
  std::printf("  whole compile, with __nv_sinf                           %8.2f\n", median(with_ms));
  std::printf("  whole compile, fmul instead                             %8.2f\n", median(without_ms));
  std::printf("  added                                                   %8.2f  (ratio %.2f)\n",
              median(with_ms) - median(without_ms), median(with_ms) / median(without_ms));
  std::printf("    libdevice-link + nvvm-reflect passes                  %8.2f\n", median(pass));
  std::printf("    optimizing, code generation, nvJitLink: sinf's code   %8.2f\n",
              median(opt_with) - median(opt_without));
  std::error_code ec;
  fs::remove_all(*dir, ec);
  return Ok{};
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) return 2;
  kjit::Status status = kjit::bench::run(reps);
  if (status) return 0;
  std::fprintf(stderr, "%s: %s\n%s\n", argv[0], status.error().message.c_str(), status.error().log.c_str());
  return 1;
}
