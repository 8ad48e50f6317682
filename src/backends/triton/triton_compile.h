// One Triton compile: a module of Triton IR, a target and Triton's options,
// lowered by the build's own pipeline in the process's warm interpreter for
// that build (started at the first compile, kept for the next ones).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
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
  // The pipeline's edits of Triton's stages, as a JSON list (worker script:
  // op, anchor, pass, stage, passes, origin); "" for none. And the pass
  // plugin libraries the build loads first.
  std::string edits_json;
  std::vector<std::string> plugins;
  // The build's plugins switched off for this kernel, by name (an installed
  // package's distribution, a configured library's path; "*" all).
  std::vector<std::string> plugins_off;
  std::chrono::milliseconds timeout{600'000};
};

// One of Triton's stages and the MLIR passes it runs, by argument name.
struct TritonStage {
  std::string name;
  std::vector<std::string> passes;
};

struct TritonCompileOutput {
  std::string binary;    // the cubin or hsaco
  std::string metadata;  // the .json Triton writes, as it writes it
  std::string kernel_name;
  // Triton's intermediate files by extension ("ttgir", "llir", "ptx", ...).
  std::map<std::string, std::string> files;
  std::vector<StageTiming> stages;  // Triton's own stages, as they ran
  std::vector<TritonStage> passes;  // the MLIR passes each stage that ran ran
  std::string log;
};

// Triton's stages for this target and options (each with its passes, the
// source's own stage too) and, per source IR ("ttir", "ttgir"), the stages
// Triton skips for it.
struct TritonPipeline {
  std::vector<TritonStage> stages;
  std::map<std::string, std::vector<std::string>> skipped;
};

// The bounds of one Triton job, applied to the child the build's warm
// interpreter forks for it, from zero (the interpreter itself has none of
// them); 0 leaves one unbounded. Set once per process by a compile worker.
struct TritonJobBounds {
  uint64_t cpu_seconds = 0;
  uint64_t memory_bytes = 0;  // beyond what the child holds when forked
  std::chrono::milliseconds time{0};
};
void set_triton_job_bounds(TritonJobBounds bounds);

// Which of the bounds above ("cpu", "memory", "time") stopped the latest
// compile_triton of this process, if one did; cleared by reading it. A
// worker reads it after each job: the job's child went, the worker lives.
std::optional<std::string> take_triton_job_bound();

// Where the process's interpreters live (each in a directory of its own
// under it): a worker's private directory. Until set, a directory under
// TMPDIR.
void set_triton_home(std::string directory);

// invalid_argument with Triton's diagnostic for what the module or its
// options caused; failed_precondition for a target the build lacks;
// resource_exhausted or deadline_exceeded naming the job's bound that stopped
// it; internal when the interpreter failed (it is restarted at the next
// compile).
Result<TritonCompileOutput> compile_triton(const TritonBuild& build, const TritonCompileRequest& request);

// What compile_triton would run, from a small kernel's compile (cached by the
// interpreter per target, options and plugins).
// `warm_up`: asked ahead of any client (a prestarted worker): an
// interpreter started for it warms up at idle CPU priority, and its probe
// compile runs there too.
Result<TritonPipeline> describe_triton_pipeline(const TritonBuild& build, const Target& target,
                                                const std::vector<std::string>& plugins, bool warm_up = false,
                                                const std::vector<std::string>& plugins_off = {});

}  // namespace kjit
