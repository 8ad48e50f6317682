// Pass "llvm-passes": LLVM IR in, optimized bitcode out, through LLVM's new
// pass manager and a pipeline given as text ("default<O3>",
// "function(instcombine),default<O2>"). Passes of LLVM pass plugins are
// usable by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/llvm/llvm_module.h"

namespace kjit {

struct LlvmOptimizeRequest {
  std::string_view ir;  // text or bitcode
  std::string_view name;
  std::string pipeline = "default<O3>";
  LlvmTarget target;
  std::vector<std::string> pass_plugin_paths;  // loaded with llvm::PassPlugin::Load
};

Result<std::string> run_llvm_passes(const LlvmOptimizeRequest& request);

// Loads an LLVM pass plugin once and keeps it; a failure is a clear error.
Status load_llvm_pass_plugin(const std::string& path);

}  // namespace kjit
