// kjit_bench_amd: the two AMD paths for one kernel, HIP source through
// HIPRTC and its LLVM IR through LLVM 19's AMDGPU back end and lld, each
// called directly in this process and through kjitd, in interleaved rounds.
// Every round changes a comment in the input, so every kjitd call is a
// compile (a cache miss). Prints a table; asserts nothing about timings.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/amdgpu/amdgpu_codegen.h"
#include "backends/amdgpu/hsaco_link.h"
#include "backends/hiprtc/hiprtc_api.h"
#include "backends/hiprtc/hiprtc_stage.h"
#include "backends/llvm/llvm_optimizer.h"
#include "bench_options.h"
#include "kjit/client.h"
#include "sample_stats.h"
#include "support/amd_kernels.h"
#include "support/daemon_process.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

constexpr const char* k_processor = "gfx90a";

struct Samples {
  std::vector<double> direct_hiprtc, kjitd_hiprtc, direct_llvm, kjitd_llvm;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::not_found, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What the llvm-amdgpu pipeline runs, called directly: O3, code generation, link.
Status direct_llvm(const std::string& ir) {
  LlvmOptimizeRequest optimize;
  optimize.ir = ir;
  optimize.name = "tile_sum.ll";
  optimize.target = LlvmTarget{std::string(k_amdgpu_triple), k_processor, ""};
  Result<std::string> optimized = run_llvm_passes(optimize);
  if (!optimized) return optimized.error();
  AmdgpuCodegenRequest codegen;
  codegen.ir = *optimized;
  codegen.name = "tile_sum.ll";
  codegen.processor = k_processor;
  Result<std::string> object = amdgpu_codegen(codegen);
  if (!object) return object.error();
  Result<HsacoLinkOutput> linked = link_hsaco(*object, "tile_sum.ll");
  if (!linked) return linked.error();
  return Ok{};
}

Status direct_hiprtc(const HiprtcApi& api, const std::string& source) {
  HipCompileRequest request;
  request.source = source;
  request.name = "tile_sum.hip";
  request.processor = k_processor;
  Result<HsacoOutput> out = compile_hip_to_hsaco(api, request);
  if (!out) return out.error();
  return Ok{};
}

Status through_kjitd(const Client& client, InputKind kind, const std::string& input) {
  CompileRequest request;
  request.input_kind = kind;
  request.input = input;
  request.input_name = kind == InputKind::hip_source ? "tile_sum.hip" : "tile_sum.ll";
  request.target = std::string("hip:") + k_processor;
  Result<CompileResult> result = client.compile(request);
  if (!result) return result.error();
  if (result->cache != "compiled")
    return make_error(ErrorCode::internal, "expected a compile, got a " + result->cache + " hit");
  return Ok{};
}

template <typename Call>
Status timed(std::vector<double>& samples, Call call) {
  auto start = std::chrono::steady_clock::now();
  Status status = call();
  samples.push_back(ms_since(start));
  return status;
}

Status run(const BenchOptions& options) {
  std::optional<HiprtcLocation> location = find_hiprtc();
  if (!location) return make_error(ErrorCode::failed_precondition, "no HIPRTC here (scripts/install-deps.sh installs it)");
  Result<std::shared_ptr<const HiprtcApi>> api = load_hiprtc(*location);
  if (!api) return api.error();
  Result<std::string> ir = read_text(std::string(KJIT_BENCH_DIR) + "/kernels/tile_sum_gfx90a.ll");
  if (!ir) return ir.error();
  const std::string hip = test::k_hip_kernel;  // the source the .ll file was lowered from

  test::DaemonOptions daemon_options;
  daemon_options.args = {"--compile-workers", "2"};
  Result<std::unique_ptr<test::DaemonProcess>> daemon = test::DaemonProcess::start(daemon_options);
  if (!daemon) return in_context("starting kjitd", daemon.error());
  Client client((*daemon)->socket_path());

  // Warm-up, outside the measurements: the first call of each loads and
  // initialises the compilers (and kjitd starts its workers).
  if (Status s = direct_hiprtc(**api, hip); !s) return in_context("HIPRTC", s.error());
  if (Status s = direct_llvm(*ir); !s) return in_context("LLVM", s.error());
  if (Status s = through_kjitd(client, InputKind::hip_source, hip + "// warm-up\n"); !s) return in_context("kjitd HIP", s.error());
  if (Status s = through_kjitd(client, InputKind::llvm_ir, *ir + "; warm-up\n"); !s) return in_context("kjitd IR", s.error());

  Samples samples;
  for (int round = 0; round < options.reps; ++round) {
    const std::string tag = "round " + std::to_string(round) + "\n";
    const std::string hip_round = hip + "// " + tag, ir_round = *ir + "; " + tag;
    if (Status s = timed(samples.direct_hiprtc, [&] { return direct_hiprtc(**api, hip_round); }); !s) return s;
    if (Status s = timed(samples.kjitd_hiprtc, [&] { return through_kjitd(client, InputKind::hip_source, hip_round); }); !s)
      return s;
    if (Status s = timed(samples.direct_llvm, [&] { return direct_llvm(ir_round); }); !s) return s;
    if (Status s = timed(samples.kjitd_llvm, [&] { return through_kjitd(client, InputKind::llvm_ir, ir_round); }); !s)
      return s;
  }

  const double hiprtc = median(samples.direct_hiprtc), llvm = median(samples.direct_llvm);
  std::printf("tile_sum (32 KiB LDS, __launch_bounds__(256)) for %s, HIPRTC %s; %d interleaved rounds, medians\n\n",
              k_processor, location->version.c_str(), options.reps);
  TextTable table({"path", "direct ms", "through kjitd ms", "kjitd / direct"});
  table.add_row({"HIP source, HIPRTC", fixed(hiprtc, 1), fixed(median(samples.kjitd_hiprtc), 1),
                 fixed(median(samples.kjitd_hiprtc) / hiprtc, 2) + "x"});
  table.add_row({"LLVM IR, LLVM 19 + lld", fixed(llvm, 1), fixed(median(samples.kjitd_llvm), 1),
                 fixed(median(samples.kjitd_llvm) / llvm, 2) + "x"});
  table.print();
  std::printf("\nHIPRTC / LLVM, direct: %.2fx (HIPRTC also runs the C++ front end; the LLVM path starts from "
              "clang's unoptimised IR)\n",
              hiprtc / llvm);
  return Ok{};
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  return kjit::bench::bench_main(argc, argv, "kjit_bench_amd",
                                 "HIPRTC against LLVM for one AMD kernel, directly and through kjitd", 9,
                                 kjit::bench::run);
}
