// Fuzzes the Compile RPC's edge: a kjit.v1.CompileRequest from any bytes,
// through to_compile_job, and each job it accepts on to a compile worker.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_check.h"
#include "kjit/v1/compiler.pb.h"
#include "pipeline/compile_options.h"
#include "server/edge/compile_translation.h"
#include "server/workers/worker_protocol.h"

// Mutated bytes often break proto3's UTF-8 rule for string fields, which
// protobuf logs on every parse: noise that would bury a real report.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kjit::v1::CompileRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  static const kjit::DaemonConfig config{};
  kjit::Result<kjit::CompileJob> job = kjit::to_compile_job(request, config);
  if (!job) {
    const kjit::ErrorCode code = job.error().code;
    FUZZ_CHECK(code == kjit::ErrorCode::invalid_argument || code == kjit::ErrorCode::resource_exhausted);
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
  kjit::Result<kjit::CheckedOptions> options = kjit::check_options(job->input_kind, job->options);
  FUZZ_CHECK(options.ok());
  FUZZ_CHECK(options->normalized == job->options);

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
