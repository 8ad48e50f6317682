// Writes the seed inputs only the project's own encoders can make: cache
// entries, worker jobs and frames, and serialized CompileRequests.
//
// Run by hand, its output committed:
//   cmake --build build-fuzz --target kjit_fuzz_make_seeds
//   build-fuzz/bin/kjit_fuzz_make_seeds tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cache/cache_entry.h"
#include "kjit/v1/compiler.pb.h"
#include "server/workers/worker_protocol.h"

namespace {

namespace fs = std::filesystem;

const fs::path* g_root = nullptr;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = *g_root / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string frame(const std::string& payload) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((payload.size() >> (8 * i)) & 0xff);
  return out + payload;
}

constexpr char k_source[] =
    "#include \"common.h\"\n"
    "template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n";

kjit::KernelInfo kernel(const std::string& name, const std::string& lowered) {
  kjit::KernelInfo k;
  k.name = name;
  k.lowered_name = lowered;
  k.registers = 16;
  k.static_shared_bytes = 4096;
  k.shared_section_bytes = 5120;
  k.local_bytes = 8;
  k.max_threads_per_block = 256;
  k.required_threads = {128, 2, 1};
  k.cluster_dims = {2, 1, 1};
  k.max_registers = 64;
  k.param_bytes = 20;
  return k;
}

void cache_entries() {
  kjit::CacheEntry full;
  full.key = std::string(64, 'a');
  full.compile_ms = 12.5;
  full.created_unix = 1735689600;
  kjit::Artifact& a = full.artifact;
  a.kind = kjit::ArtifactKind::cubin;
  a.bytes = std::string(
                "\x7f"
                "ELF",
                4) +
            std::string(60, '\0');
  a.target = "cuda:90";
  a.kernels = {kernel("scale<float>", "_Z5scaleIfEvPT_S0_"), kernel("add", "add")};
  a.lowered_names = {{"scale<float>", "_Z5scaleIfEvPT_S0_"}};
  a.timings = {{"nvrtc", 30.5, {{"nvrtc-compile", 30.0}}}, {"nvjitlink", 4.0, {}}};
  a.log = "ptxas info    : Used 16 registers\n";
  a.key = full.key;
  a.key_components = {{"target", "cuda:90"}, {"toolkit", "13.0"}};
  a.pipeline = "cuda-default";
  a.notes = {"a note"};
  write("cache_entry", "cubin_entry", kjit::encode_entry(full));

  kjit::CacheEntry ptx;
  ptx.key = std::string(64, 'b');
  ptx.artifact.kind = kjit::ArtifactKind::ptx;
  ptx.artifact.bytes = ".version 9.0\n.target sm_90\n.address_size 64\n";
  ptx.artifact.target = "cuda:107";
  ptx.artifact.notes = {"PTX returned: toolkit 13.0 cannot build sm_107"};
  write("cache_entry", "ptx_entry", kjit::encode_entry(ptx));

  kjit::CacheEntry empty;  // no key, no metadata beyond the kind, no payload
  write("cache_entry", "empty_entry", kjit::encode_entry(empty));
}

kjit::CompileJob cuda_job() {
  kjit::CompileJob job;
  job.input_kind = kjit::InputKind::cuda_source;
  job.input = k_source;
  job.input_name = "scale.cu";
  job.target = *kjit::parse_target("cuda:90a");
  job.options = {"-std=c++17", "-DN=4", "-lineinfo", "-Xptxas=-O3"};
  job.headers = {{"common.h", "#pragma once\n#include \"detail/util.h\"\n"}, {"detail/util.h", "#pragma once\n"}};
  job.name_expressions = {"scale<float>"};
  job.wanted = kjit::ArtifactKind::cubin;
  job.pass_args = {{"llvm-passes.pipeline", "default<O2>"}};
  return job;
}

// A plan as the daemon derives one: the default CUDA pipeline's shape.
kjit::CompilePlan sample_plan() {
  kjit::CompilePlan plan;
  plan.pipeline.name = "cuda-nvidia";
  plan.pipeline.stages = {{"frontend", kjit::IrKind::cuda_source, kjit::IrKind::ptx, {"nvrtc"}},
                          {"assemble", kjit::IrKind::ptx, kjit::IrKind::cubin, {"nvjitlink"}}};
  plan.args = {{"llvm-passes.pipeline", "default<O2>"}};
  plan.key.hex = std::string(64, 'c');
  plan.key.components = {{"input.kind", "cuda-source"}, {"target", "cuda:90a"}};
  return plan;
}

void worker_jobs() {
  const std::string cuda = kjit::to_worker_job(cuda_job(), sample_plan()).SerializeAsString();
  kjit::CompileJob ptx_job;
  ptx_job.input_kind = kjit::InputKind::ptx;
  ptx_job.input = ".version 9.0\n.target sm_90\n.address_size 64\n";
  ptx_job.input_name = "input.ptx";
  ptx_job.target = *kjit::parse_target("cuda:107");
  ptx_job.wanted = kjit::ArtifactKind::ptx;
  ptx_job.allow_ptx_fallback = true;
  const std::string ptx = kjit::to_worker_job(ptx_job, sample_plan()).SerializeAsString();

  write("worker_protocol", "job_cuda", cuda);
  write("worker_protocol", "job_ptx", ptx);
  write("worker_protocol", "frames_two_jobs", frame(cuda) + frame(ptx));
  write("worker_protocol", "frame_truncated", frame(cuda).substr(0, 40));
  write("worker_protocol", "frame_empty", frame(""));
}

void compile_requests() {
  kjit::v1::CompileRequest cuda;
  cuda.mutable_input()->set_kind(kjit::v1::INPUT_KIND_CUDA_SOURCE);
  cuda.mutable_input()->set_data(k_source);
  cuda.mutable_input()->set_name("src/scale.cu");
  cuda.set_target("cuda:90a");
  for (const char* option : {"-std=c++17", "--define-macro=N=4", "-lineinfo", "-Xptxas=-O3", "-maxrregcount=64"})
    cuda.add_options(option);
  (*cuda.mutable_headers())["common.h"] = "#pragma once\n#include \"detail/util.h\"\n";
  (*cuda.mutable_headers())["detail/util.h"] = "#pragma once\n";
  cuda.add_name_expressions("scale<float>");
  cuda.set_artifact(kjit::v1::ARTIFACT_KIND_CUBIN);
  (*cuda.mutable_pass_args())["llvm-passes.pipeline"] = "default<O2>";
  write("compile_request", "cuda_source", cuda.SerializeAsString());

  kjit::v1::CompileRequest ptx;
  ptx.mutable_input()->set_kind(kjit::v1::INPUT_KIND_PTX);
  ptx.mutable_input()->set_data(".version 9.0\n.target sm_90\n.address_size 64\n");
  ptx.set_target("cuda:107");
  ptx.set_artifact(kjit::v1::ARTIFACT_KIND_PTX);
  ptx.set_allow_ptx_fallback(true);
  write("compile_request", "ptx", ptx.SerializeAsString());

  kjit::v1::CompileRequest bitcode;
  bitcode.mutable_input()->set_kind(kjit::v1::INPUT_KIND_LLVM_BITCODE);
  bitcode.mutable_input()->set_data(std::string("BC\xc0\xde\0\0", 6));
  bitcode.set_pipeline("fast-llvm");
  write("compile_request", "llvm_bitcode", bitcode.SerializeAsString());

  kjit::v1::CompileRequest refused = cuda;
  refused.add_options("-I/etc");
  write("compile_request", "refused_option", refused.SerializeAsString());

  kjit::v1::CompileRequest triton;
  triton.mutable_input()->set_kind(kjit::v1::INPUT_KIND_TRITON);
  triton.mutable_input()->set_data(
      "module {\n  tt.func public @add(%arg0: !tt.ptr<f32>) attributes {noinline = false} {\n"
      "    tt.return\n  }\n}\n");
  triton.mutable_input()->set_name("add.ttir");
  triton.set_target("cuda:90");
  (*triton.mutable_triton_options())["num_warps"] = "8";
  (*triton.mutable_triton_options())["enable_fp_fusion"] = "false";
  write("compile_request", "triton_ttir", triton.SerializeAsString());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  g_root = &root;
  cache_entries();
  worker_jobs();
  compile_requests();
  return 0;
}
