#include "daemon_config.h"

#include <toml++/toml.h>

#include <set>

#include "pipeline/pipeline_toml.h"
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
        (k == "from" ? range.min_sm : range.max_sm) = target->sm;
      } else {
        return config_error(path, "unknown key toolkits." + k);
      }
    }
    if (range.cuda_home.empty() || !range.min_sm || !range.max_sm || range.min_sm > range.max_sm)
      return config_error(path, "each [[toolkits]] needs cuda_home and from <= to");
    out.push_back(range);
  }
  return Ok{};
}

template <typename T>
Status read_value(const toml::node& node, const std::string& path, const std::string& key, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    auto v = node.value<std::string>();
    if (!v) return config_error(path, key + " must be a string");
    out = *v;
  } else {
    auto v = node.value<int64_t>();
    if (!v || *v <= 0) return config_error(path, key + " must be a positive integer");
    out = static_cast<T>(*v);
  }
  return Ok{};
}

}  // namespace

Status load_config_file(const std::string& path, DaemonConfig& config) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::string where;
    if (e.source().begin.line) where = " (line " + std::to_string(e.source().begin.line) + ")";
    return config_error(path, std::string(e.description()) + where);
  }

  for (auto&& [key, node] : root) {
    std::string k(key.str());
    Status s = Ok{};
    if (k == "socket") s = read_value(node, path, k, config.socket_path);
    else if (k == "listen") s = read_value(node, path, k, config.listen_address);
    else if (k == "default_target") s = read_value(node, path, k, config.default_target);
    else if (k == "cuda_home") s = read_value(node, path, k, config.cuda_home);
    else if (k == "log_level") s = read_value(node, path, k, config.log_level);
    else if (k == "plugins") s = read_strings(node, path, k, config.plugins);
    else if (k == "llvm_pass_plugins") s = read_strings(node, path, k, config.llvm_pass_plugins);
    else if (k == "toolkits") s = read_toolkits(node, path, config.toolkits);
    else if (k == "pipelines" || k == "edits") continue;  // read below
    else if (k == "limits") {
      const toml::table* limits = node.as_table();
      if (!limits) return config_error(path, "[limits] must be a table");
      for (auto&& [lkey, lnode] : *limits) {
        std::string lk(lkey.str());
        std::string full = "limits." + lk;
        if (lk == "max_input_bytes") s = read_value(lnode, path, full, config.max_input_bytes);
        else if (lk == "max_header_bytes") s = read_value(lnode, path, full, config.max_header_bytes);
        else if (lk == "max_headers") s = read_value(lnode, path, full, config.max_headers);
        else if (lk == "max_options") s = read_value(lnode, path, full, config.max_options);
        else if (lk == "max_name_expressions") s = read_value(lnode, path, full, config.max_name_expressions);
        else if (lk == "max_launch_bytes") s = read_value(lnode, path, full, config.max_launch_bytes);
        else return config_error(path, "unknown key " + full);
        if (!s) return s;
      }
    } else {
      return config_error(path, "unknown key " + k);
    }
    if (!s) return s;
  }
  return read_pipeline_config(root, path, config.pipelines);
}

}  // namespace kjit
