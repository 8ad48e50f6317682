// The lowering pipeline of the first slice: CUDA C++ -> PTX (NVRTC) ->
// cubin (nvJitLink), PTX -> cubin, and the cubin's kernels read back. A pure
// function CompileJob -> Artifact | Error; where it runs is the caller's
// choice.
#pragma once

#include <memory>

#include "backends/cuda_toolkit.h"
#include "core/artifact.h"
#include "core/compile_job.h"

namespace kjit {

class CompilePipeline {
 public:
  explicit CompilePipeline(std::shared_ptr<const CudaToolkit> toolkit);

  // Options in the job must have passed check_options already; the pipeline
  // checks them again to split them between stages.
  Result<Artifact> run(const CompileJob& job) const;

  const CudaToolkit& toolkit() const { return *toolkit_; }

 private:
  Status check_target_supported(const CompileJob& job) const;

  std::shared_ptr<const CudaToolkit> toolkit_;
};

}  // namespace kjit
