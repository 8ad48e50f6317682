// Stage "nvrtc": CUDA C++ source -> PTX with NVRTC, in-process.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_api.h"
#include "core/compile_job.h"

namespace kjit {

struct PtxOutput {
  std::string ptx;
  std::string log;
  std::map<std::string, std::string> lowered_names;  // name expression -> symbol
};

// `options` is the full NVRTC option list (architecture and include
// directories included). A compile error is invalid_argument with the log.
// With a `pch_directory` (automatic PCH on, nvrtc_pch.h), NVRTC reuses and
// writes precompiled headers there; a PCH it refuses costs a compile
// without PCH, never the request, and the PCH lines are not in the log.
Result<PtxOutput> compile_cuda_to_ptx(const NvrtcApi& api, const CompileJob& job, const std::vector<std::string>& options,
                                      const std::string& pch_directory = {});

}  // namespace kjit
