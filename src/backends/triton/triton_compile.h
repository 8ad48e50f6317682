// One Triton compile: a module of Triton IR, a target and Triton's options,
// lowered by the build's own pipeline in the process's warm interpreter for
// that build (started at the first compile, kept for the next ones).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "backends/triton/triton_build.h"
#include "kjit/status.h"
#include "kjit/types.h"
#include "target/target.h"

namespace kjit {

struct TritonCompileRequest {
  std::string_view module_text;
  std::string input_name;            // its extension (.ttir, .ttgir, .glir) says which IR; else the text does
  Target target;
  std::vector<std::string> options;  // canonical "name=value" (check_triton_options)
  std::chrono::milliseconds timeout{600'000};
};

struct TritonCompileOutput {
  std::string binary;    // the cubin or hsaco
  std::string metadata;  // the .json Triton writes, as it writes it
  std::string kernel_name;
  std::vector<StageTiming> stages;  // Triton's own stages, as they ran
  std::string log;
};

// Where the process's interpreters live (each in a directory of its own
// under it): a worker's private directory. Until set, a directory under
// TMPDIR.
void set_triton_home(std::string directory);

// invalid_argument with Triton's diagnostic for what the module or its
// options caused; failed_precondition for a target the build lacks; internal
// or deadline_exceeded when the interpreter failed (it is restarted at the
// next compile).
Result<TritonCompileOutput> compile_triton(const TritonBuild& build, const TritonCompileRequest& request);

}  // namespace kjit
