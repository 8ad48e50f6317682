// Compiles CUDA C++ to a cubin inside this process by calling NVRTC and
// nvJitLink directly: the baseline that kjitd's cost is measured against.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "kjit/status.h"

namespace kjit::bench {

struct DirectCompileOutput {
  std::string cubin;
  std::map<std::string, std::string> lowered_names;  // name expression -> symbol
  double nvrtc_ms = 0;                               // CUDA C++ -> PTX
  double nvjitlink_ms = 0;                           // PTX -> cubin
};

class DirectCompiler {
 public:
  // `cuda_home`: the toolkit whose headers NVRTC searches, the same
  // directories kjitd passes, so both sides parse the same files.
  DirectCompiler(const std::string& cuda_home, unsigned sm);

  Result<DirectCompileOutput> compile(const BenchKernel& kernel) const;

  // "13.0" for NVRTC and nvJitLink, as the loaded libraries report them.
  static std::string nvrtc_version();
  static std::string nvjitlink_version();

 private:
  std::vector<std::string> nvrtc_options_;
  std::vector<std::string> link_options_;
};

}  // namespace kjit::bench
