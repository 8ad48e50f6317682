#include "pipeline/pass.h"

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

}  // namespace kjit
