// What the daemon benchmarks send and time: saxpy with a comment of its
// own (a new source: a miss the first time), and one compile timed, whose
// answer must come from where the benchmark expects it.
#pragma once

#include <chrono>
#include <string>

#include "bench_kernels.h"
#include "kjit/client.h"
#include "sample_stats.h"

namespace kjit::bench {

// saxpy: a real kernel, small enough that kjit's own overhead shows.
inline CompileRequest saxpy_request(const std::string& variant) {
  const BenchKernel kernel = bench_kernels()[1];
  CompileRequest request;
  request.input = kernel.source + "// " + variant + "\n";
  request.input_name = kernel.name + ".cu";
  request.target = "cuda:90";
  return request;
}

// One timed call in ms; an answer from the wrong place (CompileResult::cache
// other than expected_cache) is an error, not a sample.
inline Result<double> timed_compile(Client& client, const CompileRequest& request, const std::string& expected_cache) {
  const auto start = std::chrono::steady_clock::now();
  Result<CompileResult> result = client.compile(request);
  const double ms = ms_since(start);
  if (!result) return result.error();
  if (result->cache != expected_cache)
    return make_error(ErrorCode::internal, "expected a '" + expected_cache + "' answer, got '" + result->cache + "'");
  return ms;
}

}  // namespace kjit::bench
