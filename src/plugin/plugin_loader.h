// Loads a kjit plugin (include/kjit/plugin.h) and turns what it declares into
// kjit's own types: passes, pipeline edits, a cache-key hook.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/compile_job.h"
#include "pipeline/pass.h"
#include "pipeline/pipeline_spec.h"

namespace kjit {

struct KeyHookResult {
  std::vector<KeyComponent> components;
  std::optional<std::string> input_digest;
};

struct LoadedPlugin {
  std::string path;
  std::string name;
  std::string version;
  std::vector<PassImpl> passes;
  std::vector<PipelineEdit> edits;
  std::function<Result<KeyHookResult>(const CompileJob&)> key_hook;  // empty when none
  std::string key_hook_scope;  // empty: every request
};

// A missing file, a missing entry point, a wrong ABI version or a malformed
// description is failed_precondition naming the plugin and what is wrong.
Result<LoadedPlugin> load_plugin(const std::string& path);

}  // namespace kjit
