#include "server/config/daemon_config.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <thread>

#include <toml++/toml.h>

#include <unistd.h>

#include <cstdlib>
#include <set>

#include "pipeline/pipeline_toml.h"
#include "server/config/config_keys.h"
#include "server/config/reapi_headers.h"
#include "target/target.h"

namespace kjit {
namespace {

Error config_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, "config " + path + ": " + what);
}

Status read_strings(const toml::node& node, const std::string& path, const std::string& key, std::vector<std::string>& out) {
  const toml::array* array = node.as_array();
  if (!array) return config_error(path, key + " must be an array of strings");
  for (const toml::node& item : *array) {
    auto v = item.value<std::string>();
    if (!v) return config_error(path, key + " must be an array of strings");
    out.push_back(*v);
  }
  return Ok{};
}

Status read_toolkits(const toml::node& node, const std::string& path, std::vector<ToolkitRange>& out) {
  const toml::array* array = node.as_array();
  if (!array) return config_error(path, "toolkits must be an array of [[toolkits]] tables");
  for (const toml::node& item : *array) {
    const toml::table* t = item.as_table();
    if (!t) return config_error(path, "toolkits must be an array of [[toolkits]] tables");
    ToolkitRange range;
    for (auto&& [key, value] : *t) {
      std::string k(key.str());
      auto text = value.value<std::string>();
      if (!text) return config_error(path, "toolkits." + k + " must be a string");
      if (k == "cuda_home") {
        range.cuda_home = *text;
      } else if (k == "from" || k == "to") {
        Result<Target> target = parse_target(*text);
        if (!target) return config_error(path, "toolkits." + k + ": " + target.error().message);
        (k == "from" ? range.targets.min_sm : range.targets.max_sm) = target->sm;
      } else {
        return config_error(path, "unknown key toolkits." + k);
      }
    }
    if (range.cuda_home.empty() || !range.targets.min_sm || !range.targets.max_sm ||
        range.targets.min_sm > range.targets.max_sm)
      return config_error(path, "each [[toolkits]] needs cuda_home and from <= to");
    out.push_back(range);
  }
  return Ok{};
}

// [fleet] targets: each a target kjit knows ("cuda:90", "hip:gfx942"),
// named once.
Status read_fleet(const toml::node& node, const std::string& path, std::vector<Target>& out) {
  const toml::table* table = node.as_table();
  if (!table) return config_error(path, "fleet must be a table ([fleet])");
  out.clear();
  for (auto&& [key, value] : *table) {
    const std::string k(key.str());
    if (k != "targets") return config_error(path, "unknown key fleet." + k);
    std::vector<std::string> texts;
    if (Status s = read_strings(value, path, "fleet.targets", texts); !s) return s;
    for (const std::string& text : texts) {
      Result<Target> target = parse_target(text);
      if (!target) return config_error(path, "fleet.targets: '" + text + "': " + target.error().message);
      for (const Target& known : out)
        if (known == *target)
          return config_error(path, "fleet.targets names " + target->canonical() + " more than once");
      out.push_back(std::move(target.value()));
    }
  }
  return Ok{};
}

std::optional<Status> read_scalar(const std::string& path, const std::string& file, const toml::node& node,
                                  DaemonConfig& config);

// [[triton.plugin]]: builds (required, names), library (an absolute path)
// or package (an installed plugin package's distribution), environment (a
// table of strings: the variables the plugin reads).
Status read_triton_plugin_settings(const toml::node& node, const std::string& path,
                                   std::vector<TritonPluginSetting>& out) {
  const toml::array* array = node.as_array();
  if (!array) return config_error(path, "triton.plugin must be an array of [[triton.plugin]] tables");
  for (const toml::node& item : *array) {
    const toml::table* t = item.as_table();
    if (!t) return config_error(path, "triton.plugin must be an array of [[triton.plugin]] tables");
    const std::string where = "[[triton.plugin]] " + std::to_string(out.size() + 1);
    TritonPluginSetting setting;
    for (auto&& [key, value] : *t) {
      const std::string k(key.str());
      if (k == "builds") {
        if (Status s = read_strings(value, path, where + " builds", setting.builds); !s) return s;
        for (const std::string& name : setting.builds)
          if (name.empty()) return config_error(path, where + " builds: a build's name is empty");
      } else if (k == "library" || k == "package") {
        std::optional<std::string> text = value.value<std::string>();
        if (!text || text->empty()) return config_error(path, where + " " + k + " must be a non-empty string");
        if (k == "library" && text->front() != '/')
          return config_error(path, where + " library: '" + *text + "' is not an absolute path");
        (k == "library" ? setting.library : setting.package) = *text;
      } else if (k == "environment") {
        const toml::table* variables = value.as_table();
        if (!variables) return config_error(path, where + " environment must be a table of strings");
        for (auto&& [name, text] : *variables) {
          const std::string variable(name.str());
          if (Status s = check_plugin_variable(variable); !s)
            return config_error(path, where + " environment: " + s.error().message);
          std::optional<std::string> v = text.value<std::string>();
          if (!v) return config_error(path, where + " environment." + variable + " must be a string");
          setting.environment[variable] = *v;
        }
      } else {
        return config_error(path, "unknown key " + where + " " + k + " (builds, library, package, environment)");
      }
    }
    if (setting.builds.empty())
      return config_error(path, where + " names no builds (builds = [\"triton-3.9.0\"]): a plugin is built for one Triton release");
    if (setting.library.empty() == setting.package.empty())
      return config_error(path, where + " takes one of library (a pass plugin library) and package (an installed plugin package)");
    out.push_back(std::move(setting));
  }
  return Ok{};
}

// [triton]: builds (Python environments or interpreters holding `triton`,
// looked at before the project's .deps/triton-builds), plugins, the builds
// the prestarted worker warms, and its scalars from config_keys()
// (triton.prestart).
Status read_triton(const toml::node& node, const std::string& path, DaemonConfig& config) {
  const toml::table* table = node.as_table();
  if (!table) return config_error(path, "triton must be a table ([triton])");
  for (auto&& [key, value] : *table) {
    const std::string k(key.str());
    if (k == "builds") {
      if (Status s = read_strings(value, path, "triton.builds", config.triton_builds); !s) return s;
      for (const std::string& entry : config.triton_builds)
        if (entry.empty() || entry.front() != '/')
          return config_error(path, "triton.builds: '" + entry + "' is not an absolute path");
    } else if (k == "plugins") {
      // Pass plugin libraries (their MLIR passes become names [[edits]] of
      // triton-nvidia and triton-amd can use); never a request's.
      if (Status s = read_strings(value, path, "triton.plugins", config.triton_plugins); !s) return s;
      for (const std::string& entry : config.triton_plugins)
        if (entry.empty() || entry.front() != '/')
          return config_error(path, "triton.plugins: '" + entry + "' is not an absolute path");
    } else if (k == "plugin") {
      if (Status s = read_triton_plugin_settings(value, path, config.triton_plugin_settings); !s) return s;
    } else if (k == "prestart_builds") {
      if (Status s = read_strings(value, path, "triton.prestart_builds", config.triton_prestart_builds); !s) return s;
      for (const std::string& entry : config.triton_prestart_builds)
        if (entry.empty())
          return config_error(path, "triton.prestart_builds: a build's name is empty (\"*\" names every build)");
    } else if (std::optional<Status> scalar = read_scalar("triton." + k, path, value, config)) {
      if (!*scalar) return *scalar;
    } else {
      return config_error(path, "unknown key triton." + k);
    }
  }
  return Ok{};
}

// [[blob_sharing]]: group and/or uids, and the namespace they share. The
// namespace follows the rule of tenants' namespaces (1-32 of [a-z0-9_-],
// starting with a letter or digit): it becomes part of stored keys.
Status read_blob_sharing(const toml::node& node, const std::string& path, std::vector<BlobSharing>& out) {
  const toml::array* array = node.as_array();
  if (!array) return config_error(path, "blob_sharing must be an array of [[blob_sharing]] tables");
  for (const toml::node& item : *array) {
    const toml::table* t = item.as_table();
    if (!t) return config_error(path, "blob_sharing must be an array of [[blob_sharing]] tables");
    BlobSharing sharing;
    for (auto&& [key, value] : *t) {
      const std::string k(key.str());
      if (k == "group" || k == "namespace") {
        auto text = value.value_exact<std::string>();
        if (!text) return config_error(path, "blob_sharing." + k + " must be a string");
        (k == "group" ? sharing.group : sharing.ns) = *text;
      } else if (k == "uids") {
        const toml::array* uids = value.as_array();
        if (!uids) return config_error(path, "blob_sharing.uids must be an array of user ids");
        for (const toml::node& uid : *uids) {
          auto v = uid.value_exact<int64_t>();
          // -1 is no user: it means "unchanged" to setresuid and chown.
          if (!v || *v < 0 || *v >= 0xffffffffll) return config_error(path, "blob_sharing.uids must be an array of user ids");
          sharing.uids.push_back(static_cast<uint32_t>(*v));
        }
      } else {
        return config_error(path, "unknown key blob_sharing." + k);
      }
    }
    const std::string& ns = sharing.ns;
    const bool ns_ok = !ns.empty() && ns.size() <= 32 && ns[0] != '-' && ns[0] != '_' &&
                       std::all_of(ns.begin(), ns.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
                       });
    if (!ns_ok)
      return config_error(path, "each [[blob_sharing]] needs a namespace of 1-32 characters of [a-z0-9_-], "
                                "starting with a letter or digit");
    if (sharing.group.empty() && sharing.uids.empty())
      return config_error(path, "[[blob_sharing]] namespace \"" + ns + "\" names no group and no uids");
    out.push_back(std::move(sharing));
  }
  return Ok{};
}

// A scalar's TOML value as its row's kind; nullopt when the node holds
// another kind (a float where an integer is wanted, a number for a string).
std::optional<ConfigValue> toml_value(const ConfigKey& key, const toml::node& node) {
  switch (key.kind) {
    case ConfigKind::text:
      if (auto v = node.value_exact<std::string>()) return ConfigValue(*v);
      break;
    case ConfigKind::boolean:
      if (auto v = node.value_exact<bool>()) return ConfigValue(*v);  // value<bool> would take 1 for true
      break;
    case ConfigKind::integer:
      // value_exact: a float (2.5, 1e300) is no integer, and converting one could overflow.
      if (auto v = node.value_exact<int64_t>()) return ConfigValue(*v);
      break;
  }
  return std::nullopt;
}

// The key at `path` from its row of config_keys(); nullopt when no row has it.
std::optional<Status> read_scalar(const std::string& path, const std::string& file, const toml::node& node,
                                  DaemonConfig& config) {
  const ConfigKey* key = find_config_key(path);
  if (!key) return std::nullopt;
  std::optional<ConfigValue> value = toml_value(*key, node);
  if (!value) return config_error(file, path + " must be " + config_value_rule(*key));
  if (Status s = set_config_value(config, *key, *value, path); !s) return config_error(file, s.error().message);
  return Ok{};
}

// A table of scalars ([tls], [admission], [limits], [cache]): each key from
// its row as "<table>.<key>".
Status read_scalar_table(const toml::node& node, const std::string& file, const std::string& name,
                         DaemonConfig& config) {
  const toml::table* t = node.as_table();
  if (!t) return config_error(file, "[" + name + "] must be a table");
  for (auto&& [key, value] : *t) {
    const std::string full = name + "." + std::string(key.str());
    // Nested tables of scalars ([cache.reapi]), and their one list.
    if (full == "cache.reapi.headers") {
      if (Status s = read_strings(value, file, full, config.cache.reapi.headers); !s) return s;
      for (const std::string& header : config.cache.reapi.headers)
        if (!parse_reapi_header(header))
          return config_error(file, full + ": \"" + header + "\" is not \"Name: value\"");
      continue;
    }
    if (full == "cache.reapi") {
      if (Status s = read_scalar_table(value, file, full, config); !s) return s;
      continue;
    }
    std::optional<Status> s = read_scalar(full, file, value, config);
    if (!s) return config_error(file, "unknown key " + full);
    if (!*s) return *s;
  }
  return Ok{};
}

}  // namespace

uint32_t default_compile_workers() { return std::max(2u, std::thread::hardware_concurrency()); }

Result<std::string> read_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return config_error(path, "cannot be read");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status load_config_file(const std::string& path, DaemonConfig& config) {
  Result<std::string> text = read_config_file(path);
  if (!text) return text.error();
  return load_config_text(*text, path, config);
}

Status load_config_text(const std::string& text, const std::string& path, DaemonConfig& config) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    std::string where;
    if (e.source().begin.line) where = " (line " + std::to_string(e.source().begin.line) + ")";
    return config_error(path, std::string(e.description()) + where);
  }

  for (auto&& [key, node] : root) {
    const std::string k(key.str());
    Status s = Ok{};
    if (k == "tls" || k == "admission" || k == "limits" || k == "cache") s = read_scalar_table(node, path, k, config);
    else if (k == "plugins") s = read_strings(node, path, k, config.plugins);
    else if (k == "llvm_pass_plugins") s = read_strings(node, path, k, config.llvm_pass_plugins);
    else if (k == "toolkits") s = read_toolkits(node, path, config.toolkits);
    else if (k == "toolkit_paths") s = read_strings(node, path, k, config.toolkit_paths);
    else if (k == "blob_sharing") s = read_blob_sharing(node, path, config.blob_sharing);
    else if (k == "fleet") s = read_fleet(node, path, config.fleet_targets);
    else if (k == "triton") s = read_triton(node, path, config);
    else if (k == "pipelines" || k == "edits") continue;  // read below
    else if (std::optional<Status> scalar = read_scalar(k, path, node, config)) s = *scalar;
    else return config_error(path, "unknown key " + k);
    if (!s) return s;
  }
  return read_pipeline_config(root, path, config.pipelines);
}

}  // namespace kjit
