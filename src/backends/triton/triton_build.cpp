#include "backends/triton/triton_build.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "backends/toolkit_discovery.h"
#include "backends/triton/json_strings.h"

namespace kjit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Error invalid(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

// "3.10.0" after "3.9.0": numeric parts compared as numbers.
std::vector<int> version_parts(std::string_view version) {
  std::vector<int> parts;
  while (!version.empty()) {
    int part = 0;
    auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), part);
    parts.push_back(ec == std::errc{} ? part : 0);
    size_t dot = version.find('.');
    if (dot == std::string_view::npos) break;
    version.remove_prefix(dot + 1);
  }
  return parts;
}

struct ProcessBuilds {
  std::mutex mutex;
  std::function<std::vector<TritonBuild>()> source;  // asked once, then cleared
  std::vector<TritonBuild> builds;
};
ProcessBuilds& process() {
  static ProcessBuilds p;
  return p;
}

std::string build_names() {
  std::string names;
  for (const TritonBuild& build : triton_builds()) names += (names.empty() ? "" : ", ") + build.name;
  return names.empty() ? "none (no Triton build was found; scripts/install-deps.sh installs two)" : names;
}

// TLX's ops are a dialect of their own, spelled "tlx." in the module's text.
bool uses_tlx(std::string_view module_text) { return module_text.find("tlx.") != std::string_view::npos; }

}  // namespace

namespace {

std::string environment_text(const std::map<std::string, std::string>& environment) {
  std::string out;
  for (const auto& [name, value] : environment) out += " " + name + "=" + value;
  return out;
}

}  // namespace

std::string TritonBuild::core_identity() const {
  std::string out = distribution + " " + version + " libtriton.so:" + libtriton_sha256;
  for (const TritonPtxas& p : ptxas) out += " " + fs::path(p.path).filename().string() + ":" + p.sha256;
  return out;
}

std::vector<std::pair<std::string, std::string>> TritonBuild::plugin_identities() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TritonPluginPackage& plugin : installed_plugins) {
    std::string text = plugin.version;
    for (const TritonPtxas& library : plugin.libraries)
      text += " " + fs::path(library.path).filename().string() + ":" + library.sha256;
    if (!plugin.stages_hook_sha256.empty()) text += " stages-hook:" + plugin.stages_hook_sha256;
    for (const TritonConfiguredPlugin& configured : configured_plugins)
      if (configured.package == plugin.distribution) text += environment_text(configured.environment);
    out.emplace_back(plugin.distribution, std::move(text));
  }
  for (const TritonConfiguredPlugin& configured : configured_plugins)
    if (configured.package.empty())
      out.emplace_back(configured.library, "sha256:" + configured.sha256 + environment_text(configured.environment));
  return out;
}

std::string TritonBuild::identity() const {
  std::string out = core_identity();
  for (const auto& [name, text] : plugin_identities()) out += " plugin " + name + " " + text;
  return out;
}

std::vector<std::string> TritonBuild::plugin_names() const {
  std::vector<std::string> out;
  for (const TritonPluginPackage& plugin : installed_plugins) out.push_back(plugin.distribution);
  for (const TritonConfiguredPlugin& configured : configured_plugins)
    if (configured.package.empty()) out.push_back(configured.library);
  return out;
}

std::vector<std::string> TritonBuild::interpreter_environment() const {
  json variables = json::object();
  std::string libraries;
  for (const TritonConfiguredPlugin& configured : configured_plugins) {
    for (const auto& [name, value] : configured.environment) variables[name] = value;
    if (!configured.library.empty() && plugin_loader == "TRITON_PLUGIN_PATHS")
      libraries += (libraries.empty() ? "" : ":") + configured.library;
  }
  std::vector<std::string> out;
  if (!variables.empty()) out.push_back("KJIT_TRITON_PLUGIN_ENVIRONMENT=" + variables.dump());
  if (!libraries.empty()) out.push_back("KJIT_TRITON_PLUGIN_LIBRARIES=" + libraries);
  return out;
}

std::vector<std::string> TritonBuild::job_plugin_libraries() const {
  std::vector<std::string> out;
  if (plugin_loader != "extend_with") return out;
  for (const TritonConfiguredPlugin& configured : configured_plugins)
    if (!configured.library.empty()) out.push_back(configured.library);
  return out;
}

const TritonPtxas* TritonBuild::borrowed_ptxas_for(const Target& target) const {
  if (target.is_amd()) return nullptr;
  return std::find(borrowed_cuda_archs.begin(), borrowed_cuda_archs.end(), target.sm) != borrowed_cuda_archs.end()
             ? &borrowed_ptxas
             : nullptr;
}

bool TritonBuild::builds(const Target& target) const {
  if (target.is_amd())
    return std::find(hip_archs.begin(), hip_archs.end(), target.processor) != hip_archs.end();
  return std::find(cuda_archs.begin(), cuda_archs.end(), target.sm) != cuda_archs.end();
}

Result<TritonBuild> parse_triton_build(std::string_view description, const std::string& python) {
  json d = json::parse(description, nullptr, /*allow_exceptions=*/false);
  if (!d.is_object()) return invalid("the Triton build at " + python + " answered something that is not JSON");
  if (!d.value("ok", false))
    return make_error(ErrorCode::failed_precondition,
                      "the Triton build at " + python + " cannot be used: " + d.value("message", std::string("?")));
  TritonBuild build;
  build.python = python;
  build.description = std::string(description);
  build.distribution = d.value("distribution", std::string());
  build.version = d.value("version", std::string());
  if (build.distribution.empty() || build.version.empty())
    return invalid("the Triton build at " + python + " did not say its distribution and version");
  build.name = d.value("name", build.distribution + "-" + build.version);
  build.backends = json_strings(d.value("backends", json::array()));
  for (const json& sm : d.value("cuda_archs", json::array()))
    if (sm.is_number_unsigned()) build.cuda_archs.push_back(sm.get<uint32_t>());
  build.hip_archs = json_strings(d.value("hip_archs", json::array()));
  // Named, not iterated as temporaries: items() keeps a reference to its object.
  const json options = d.value("options", json::object());
  for (const auto& [backend, fields] : options.items())
    if (fields.is_object())
      for (const auto& [name, type] : fields.items())
        if (type.is_string()) build.options[backend][name] = type.get<std::string>();
  const json refused = d.value("refused_options", json::object());
  for (const auto& [name, why] : refused.items())
    build.refused_options[name] = why.is_string() ? why.get<std::string>() : std::string("refused");
  build.libtriton_sha256 = d.value("libtriton_sha256", std::string());
  for (const json& p : d.value("ptxas", json::array()))
    if (p.is_object())
      build.ptxas.push_back({p.value("path", std::string()), p.value("sha256", std::string()),
                             p.value("version", std::string())});
  build.executables = json_strings(d.value("executables", json::array()));
  build.read_paths = json_strings(d.value("read_paths", json::array()));
  build.plugins = json_strings(d.value("plugins", json::array()));
  for (const json& p : d.value("installed_plugins", json::array())) {
    if (!p.is_object()) continue;
    TritonPluginPackage plugin{p.value("distribution", std::string()), p.value("version", std::string()), {},
                               p.value("stages_hook_sha256", std::string())};
    for (const json& library : p.value("libraries", json::array()))
      if (library.is_object())
        plugin.libraries.push_back({library.value("path", std::string()), library.value("sha256", std::string()), ""});
    build.installed_plugins.push_back(std::move(plugin));
  }
  build.plugin_loader = d.value("plugin_loader", std::string());
  // Added by the daemon (lend_newer_ptxas), not by the build itself.
  if (const json lent = d.value("borrowed_ptxas", json()); lent.is_object()) {
    build.borrowed_ptxas = {lent.value("path", std::string()), lent.value("sha256", std::string()),
                            lent.value("version", std::string())};
    build.borrowed_from = lent.value("from_build", std::string());
    for (const json& sm : lent.value("cuda_archs", json::array()))
      if (sm.is_number_unsigned()) build.borrowed_cuda_archs.push_back(sm.get<uint32_t>());
  }
  build.tlx = d.value("tlx", false);
  build.tlx_provider = d.value("tlx_provider", std::string(build.tlx ? build.distribution : ""));
  if (build.libtriton_sha256.empty()) return invalid("the Triton build at " + python + " did not say its libtriton digest");
  return build;
}

std::string default_local_triton_prefix() {
  const std::string wheels = default_local_toolkit_prefix();
  if (wheels.empty()) return {};
  return (fs::path(wheels).parent_path() / "triton-builds").string();
}

std::vector<std::string> triton_build_candidates(const TritonBuildSearch& search) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& python) {
    std::error_code ec;
    if (!fs::exists(python, ec)) return;
    // The path as given, not its target: a virtual environment's python is
    // a link to the base interpreter, and only the link finds the venv.
    const std::string text = fs::absolute(python, ec).lexically_normal().string();
    if (seen.insert(text).second) out.push_back(text);
  };
  auto add_entry = [&](const fs::path& entry) {
    std::error_code ec;
    if (fs::is_directory(entry, ec))
      add(entry / "bin" / "python");
    else
      add(entry);
  };
  for (const std::string& entry : search.configured) add_entry(entry);
  if (!search.local_prefix.empty()) {
    std::error_code ec;
    std::vector<fs::path> environments;
    for (const fs::directory_entry& entry : fs::directory_iterator(search.local_prefix, ec))
      // Half-installed environments (install-deps' staging) end in ".new".
      if (entry.is_directory(ec) && entry.path().extension() != ".new") environments.push_back(entry.path());
    std::sort(environments.begin(), environments.end());
    for (const fs::path& env : environments) add_entry(env);
  }
  return out;
}

void set_triton_builds_source(std::function<std::vector<TritonBuild>()> source) {
  std::lock_guard lock(process().mutex);
  process().source = std::move(source);
}

void set_triton_builds(std::vector<TritonBuild> builds) {
  std::lock_guard lock(process().mutex);
  process().builds = std::move(builds);
  process().source = nullptr;
}

const std::vector<TritonBuild>& triton_builds() {
  // Set once (the daemon: by its discovery, at the first use; a worker: from
  // its setup) and not changed while requests read it: readers keep the
  // reference without the lock. The first caller asks under the lock, so
  // the others wait for its answer instead of asking too.
  std::lock_guard lock(process().mutex);
  if (process().source) {
    process().builds = process().source();
    process().source = nullptr;
  }
  return process().builds;
}

bool triton_builds_known() {
  // Held while the discovery runs: not known yet either.
  std::unique_lock lock(process().mutex, std::try_to_lock);
  return lock.owns_lock() && !process().source;
}

const TritonBuild* default_triton_build() {
  const TritonBuild* best = nullptr;
  for (const TritonBuild& build : triton_builds()) {
    if (!best) {
      best = &build;
      continue;
    }
    const bool upstream = build.distribution == "triton", best_upstream = best->distribution == "triton";
    if (upstream != best_upstream) {
      if (upstream) best = &build;
      continue;
    }
    if (version_parts(build.version) > version_parts(best->version)) best = &build;
  }
  return best;
}

const TritonBuild* find_triton_build(std::string_view name) {
  for (const TritonBuild& build : triton_builds())
    if (build.name == name) return &build;
  return nullptr;
}

namespace {

// TLX's own front end (compiled into fbtriton) marks the module it lowers;
// uTLX's goes further (on NVIDIA to TritonGPU IR) and leaves no such mark.
bool is_compiled_in_tlx_form(std::string_view module_text) {
  return module_text.find("tlx.has_explicit_local_mem_access") != std::string_view::npos;
}

bool takes_tlx_form(const TritonBuild& build, std::string_view module_text) {
  if (!build.tlx) return false;
  const bool compiled_in = build.tlx_provider == build.distribution;
  return compiled_in == is_compiled_in_tlx_form(module_text);
}

std::string tlx_builds_for(std::string_view module_text) {
  std::string names;
  for (const TritonBuild& build : triton_builds())
    if (takes_tlx_form(build, module_text)) names += (names.empty() ? "" : ", ") + build.name;
  return names.empty() ? "none here" : names;
}

std::string tlx_form_name(std::string_view module_text) {
  return is_compiled_in_tlx_form(module_text) ? "TLX compiled into Triton (fbtriton's front end)"
                                              : "TLX as a Triton plugin (uTLX's front end)";
}

}  // namespace

Result<const TritonBuild*> choose_triton_build(std::string_view requested, std::string_view module_text) {
  if (!requested.empty()) {
    if (const TritonBuild* build = find_triton_build(requested)) {
      if (uses_tlx(module_text) && !build->tlx)
        return make_error(ErrorCode::failed_precondition,
                          "the module uses TLX ops, which Triton build '" + build->name +
                              "' does not have; builds that could take it (" + tlx_form_name(module_text) +
                              "): " + tlx_builds_for(module_text) + "; builds present: " + build_names());
      return build;
    }
    return make_error(ErrorCode::failed_precondition,
                      "no Triton build named '" + std::string(requested) + "'; builds present: " + build_names());
  }
  const TritonBuild* chosen = default_triton_build();
  if (!chosen) return make_error(ErrorCode::failed_precondition, "Triton input needs a Triton build; builds present: " + build_names());
  if (uses_tlx(module_text) && !takes_tlx_form(*chosen, module_text)) {
    for (const TritonBuild& build : triton_builds())
      if (takes_tlx_form(build, module_text)) return &build;
    // No build of the module's form: one with TLX of the other, whose own
    // diagnostic then says what it cannot take.
    if (chosen->tlx) return chosen;
    for (const TritonBuild& build : triton_builds())
      if (build.tlx) return &build;
    return make_error(ErrorCode::failed_precondition,
                      "the module uses TLX ops (" + tlx_form_name(module_text) +
                          "), which no Triton build here takes; builds present: " + build_names());
  }
  return chosen;
}

Result<std::vector<std::string>> check_triton_options(const TritonBuild& build, const Target& target,
                                                      const std::map<std::string, std::string>& options) {
  const std::string backend(TritonBuild::backend_of(target));
  auto fields = build.options.find(backend);
  if (fields == build.options.end())
    return make_error(ErrorCode::failed_precondition,
                      "Triton build '" + build.name + "' has no " + backend + " back end for " + target.canonical());
  auto known = [&] {
    std::string names;
    for (const auto& [name, type] : fields->second) names += (names.empty() ? "" : ", ") + name;
    return names;
  };
  std::vector<std::string> canonical;
  for (const auto& [name, value] : options) {
    if (auto refused = build.refused_options.find(name); refused != build.refused_options.end())
      return invalid("Triton option '" + name + "' is not taken by kjit: " + refused->second);
    auto field = fields->second.find(name);
    if (field == fields->second.end())
      return invalid("Triton build '" + build.name + "' has no option '" + name + "' for " + backend +
                     " targets; known: " + known());
    std::string type = field->second;
    const bool optional = type.ends_with('?');
    if (optional) type.pop_back();
    std::string text = value;
    if (optional && (text == "none" || text == "None" || text == "null")) {
      canonical.push_back(name + "=none");
      continue;
    }
    if (type == "int") {
      long long number = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (ec != std::errc{} || end != text.data() + text.size() || number < INT32_MIN || number > INT32_MAX)
        return invalid("Triton option '" + name + "' takes an integer, not '" + value + "'");
      text = std::to_string(number);
    } else if (type == "bool") {
      if (text == "1" || text == "True") text = "true";
      if (text == "0" || text == "False") text = "false";
      if (text != "true" && text != "false")
        return invalid("Triton option '" + name + "' takes true or false, not '" + value + "'");
    } else if (type == "float") {
      double number = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (ec != std::errc{} || end != text.data() + text.size())
        return invalid("Triton option '" + name + "' takes a number, not '" + value + "'");
    } else if (type == "str") {
      if (text.size() > 256 || text.find('\0') != std::string::npos)
        return invalid("Triton option '" + name + "' takes a short text");
    } else {
      return invalid("Triton option '" + name + "' has a type kjit does not pass (" + field->second + ")");
    }
    canonical.push_back(name + "=" + text);
  }
  // std::map iterates sorted: one spelling per set of options.
  return canonical;
}

}  // namespace kjit
