#include "backends/triton/triton_plugin_settings.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

namespace kjit {
namespace {

Error plugin_refusal(const std::string& message) { return make_error(ErrorCode::failed_precondition, message); }

std::string library_sha256(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::string plugin_build_names(const std::vector<TritonBuild>& builds) {
  std::string out;
  for (const TritonBuild& build : builds) out += (out.empty() ? "" : ", ") + build.name;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string TritonPluginSetting::describe(size_t index) const {
  return "[[triton.plugin]] " + std::to_string(index + 1) +
         (library.empty() ? " (package " + package + ")" : " (library " + library + ")");
}

Status check_plugin_variable(const std::string& name) {
  const bool well_formed = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                           std::all_of(name.begin(), name.end(), [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                           });
  if (!well_formed) return make_error(ErrorCode::invalid_argument, "'" + name + "' is not a variable's name");
  for (const char* prefix : {"TRITON_", "KJIT_", "PYTHON", "LD_"})
    if (name.rfind(prefix, 0) == 0)
      return make_error(ErrorCode::invalid_argument, "'" + name + "' is kjit's to set (" + prefix + "...)");
  for (const char* taken : {"PATH", "HOME", "TMPDIR", "LANG"})
    if (name == taken) return make_error(ErrorCode::invalid_argument, "'" + name + "' is kjit's to set");
  return Ok{};
}

Status configure_triton_plugins(std::vector<TritonBuild>& builds, const std::vector<TritonPluginSetting>& settings) {
  for (size_t i = 0; i < settings.size(); ++i) {
    const TritonPluginSetting& setting = settings[i];
    TritonConfiguredPlugin plugin{setting.library, "", setting.package, setting.environment};
    if (!setting.library.empty()) {
      std::ifstream file(setting.library, std::ios::binary);
      if (!file) return plugin_refusal(setting.describe(i) + ": cannot read " + setting.library);
      plugin.sha256 = library_sha256(std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>()));
    }
    for (const std::string& name : setting.builds) {
      auto build = std::find_if(builds.begin(), builds.end(), [&](const TritonBuild& b) { return b.name == name; });
      if (build == builds.end())
        return plugin_refusal(setting.describe(i) + " is for Triton build '" + name + "', which is not here (builds: " +
                       plugin_build_names(builds) + ")");
      if (!setting.package.empty() &&
          std::none_of(build->installed_plugins.begin(), build->installed_plugins.end(),
                       [&](const TritonPluginPackage& p) { return p.distribution == setting.package; }))
        return plugin_refusal(setting.describe(i) + ": Triton build '" + name + "' has no plugin package " + setting.package +
                       " installed");
      if (!setting.library.empty() && build->plugin_loader.empty())
        return plugin_refusal(setting.describe(i) + ": Triton build '" + name +
                       "' loads no pass plugin libraries (neither passes.plugin.extend_with nor TRITON_PLUGIN_PATHS)");
      build->configured_plugins.push_back(plugin);
    }
  }
  return Ok{};
}

}  // namespace kjit
