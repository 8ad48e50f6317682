// The cache key of a compile: every input that can change the artifact, as
// named components (the key schema, input, target, options, the
// effective pipeline, toolchains, plugins).
#pragma once

#include <optional>
#include <vector>

#include "backends/cuda_toolkit.h"
#include "pipeline/cache_key.h"
#include "core/compile_job.h"
#include "pipeline/pass.h"

namespace kjit {

struct KeyInputs {
  const CompileJob& job;
  const PipelineSpec& pipeline;       // effective, after edits
  const PassRegistry& registry;       // for pass versions and origins
  const CudaToolkit& toolkit;
  std::map<std::string, std::string> pass_args;   // effective, defaults merged
  std::optional<std::string> input_digest;        // a plugin's replacement
  std::vector<KeyComponent> plugin_components;    // "plugin.<name>..." entries
  // describe_for_key(pipeline, registry) when the caller has it already.
  const std::string* pipeline_description = nullptr;
};

CacheKey compile_key(const KeyInputs& inputs);

// "nvrtc[nvrtc-compile@1] nvjitlink[nvjitlink-link@1]": the stages and
// passes with versions (and origins for plugin passes).
std::string describe_for_key(const PipelineSpec& pipeline, const PassRegistry& registry);

}  // namespace kjit
