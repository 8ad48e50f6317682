// Fuzzes the Compile RPC's edge: a kjit.v1.CompileRequest from any bytes,
// through to_compile_job, and each job it accepts on to a compile worker.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

#include "backends/triton/triton_build.h"
#include "core/input_kinds.h"
#include "fuzz_check.h"
#include "kjit/v1/compiler.pb.h"
#include "pipeline/compile_options.h"
#include "server/edge/compile_translation.h"
#include "server/workers/worker_protocol.h"

// Mutated bytes often break proto3's UTF-8 rule for string fields, which
// protobuf logs on every parse: noise that would bury a real report.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  // One Triton build, described as a build describes itself, so that Triton
  // requests reach option checking instead of stopping at "no build".
  kjit::Result<kjit::TritonBuild> build = kjit::parse_triton_build(
      R"({"ok": true, "distribution": "triton", "version": "3.9.0", "backends": ["nvidia", "amd"],
          "cuda_archs": [80, 90, 100, 107, 120], "hip_archs": ["gfx942", "gfx950"],
          "options": {"cuda": {"num_warps": "int", "num_stages": "int", "maxnreg": "int?",
                               "enable_fp_fusion": "bool", "arch": "str?"},
                      "hip": {"num_warps": "int", "waves_per_eu": "int", "matrix_instr_nonkdim": "int"}},
          "refused_options": {"debug": "writes files"},
          "libtriton_sha256": "00", "ptxas": [{"path": "/p/ptxas", "sha256": "11", "version": "12.9"}]})",
      "/fuzz/python");
  FUZZ_CHECK(build.ok());
  kjit::set_triton_builds({std::move(build.value())});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kjit::v1::CompileRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  static const kjit::DaemonConfig config{};
  kjit::Result<kjit::CompileJob> job = kjit::to_compile_job(request, config);
  if (!job) {
    const kjit::ErrorCode code = job.error().code;
    // The one toolchain-dependent refusal at the edge: a Triton module no
    // present build can take (a named build missing, TLX ops).
    const bool triton = request.input().kind() == kjit::v1::INPUT_KIND_TRITON;
    FUZZ_CHECK(code == kjit::ErrorCode::invalid_argument || code == kjit::ErrorCode::resource_exhausted ||
               (triton && code == kjit::ErrorCode::failed_precondition));
    FUZZ_CHECK(!job.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(!job->input.empty() && job->input.size() <= config.max_input_bytes);
  // The name labels diagnostics and NVRTC resolves quoted includes next to
  // it: never empty, never a path.
  FUZZ_CHECK(!job->input_name.empty() && job->input_name.size() <= 255);
  FUZZ_CHECK(job->input_name.find_first_of("/\\") == std::string::npos);
  FUZZ_CHECK(job->input_name != "." && job->input_name != "..");
  FUZZ_CHECK(job->headers.size() <= config.max_headers && job->options.size() <= config.max_options);

  // Checked options are already normal: checking them again changes nothing.
  if (kjit::input_kind_info(job->input_kind).options == kjit::OptionFamily::triton) {
    const kjit::TritonBuild* build = kjit::find_triton_build(job->triton_build);
    FUZZ_CHECK(build != nullptr);
    std::map<std::string, std::string> given;
    for (const std::string& option : job->options) {
      const size_t eq = option.find('=');
      FUZZ_CHECK(eq != std::string::npos);
      given[option.substr(0, eq)] = option.substr(eq + 1);
    }
    kjit::Result<std::vector<std::string>> again = kjit::check_triton_options(*build, job->target, given);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(*again == job->options);
  } else {
    kjit::Result<kjit::CheckedOptions> options = kjit::check_options(job->input_kind, job->options);
    FUZZ_CHECK(options.ok());
    FUZZ_CHECK(options->normalized == job->options);
  }

  // Every job the daemon accepts must reach a compile worker unchanged: the
  // worker reads it with the same translation, which must find nothing to
  // refuse or normalise in what it accepted once.
  kjit::CompilePlan plan;
  plan.key.hex = std::string(64, 'a');
  kjit::worker::Job wire = kjit::to_worker_job(*job, plan);
  kjit::worker::Job parsed;
  FUZZ_CHECK(parsed.ParseFromString(wire.SerializeAsString()));
  kjit::Result<kjit::WorkerJob> received = kjit::from_worker_job(parsed, config);
  FUZZ_CHECK(received.ok());
  FUZZ_CHECK(received->job == *job);
  return 0;
}
