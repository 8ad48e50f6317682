#include "pipeline/pass.h"

#include <algorithm>

namespace kjit {

Status PassRegistry::add(PassImpl pass) {
  if (auto it = passes_.find(pass.name); it != passes_.end()) {
    return make_error(ErrorCode::failed_precondition, "pass '" + pass.name + "' from " + pass.origin +
                                                          " is already registered by " + it->second.origin);
  }
  if (!pass.declares_key)
    return make_error(ErrorCode::failed_precondition,
                      "pass '" + pass.name + "' from " + pass.origin +
                          " declares no key components (declares_nothing, where its output depends on nothing else)");
  std::string name = pass.name;
  passes_.emplace(std::move(name), std::move(pass));
  return Ok{};
}

const PassImpl* PassRegistry::find(std::string_view name) const {
  auto it = passes_.find(name);
  return it == passes_.end() ? nullptr : &it->second;
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, pass] : passes_) out.push_back(name);
  return out;
}

std::string toolchains_of(const PipelineSpec& pipeline, const PassRegistry& registry, const std::string& cuda_toolkit) {
  std::vector<std::string> named;
  for (const StageSpec& stage : pipeline.stages)
    for (const std::string& name : stage.passes) {
      const PassImpl* pass = registry.find(name);
      if (!pass || !pass->names_toolchain) continue;
      std::string toolchain = pass->names_toolchain(cuda_toolkit);
      if (!toolchain.empty() && std::find(named.begin(), named.end(), toolchain) == named.end())
        named.push_back(std::move(toolchain));
    }
  std::string out;
  for (const std::string& toolchain : named) out += (out.empty() ? "" : " + ") + toolchain;
  return out;
}

}  // namespace kjit
