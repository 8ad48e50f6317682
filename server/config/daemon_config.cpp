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

Status read_cache(const toml::node& node, const std::string& path, CacheConfig& cache) {
  const toml::table* t = node.as_table();
  if (!t) return config_error(path, "[cache] must be a table");
  for (auto&& [key, value] : *t) {
    std::string k(key.str());
    std::string full = "cache." + k;
    auto number = [&](uint64_t& out, bool zero_ok) -> Status {
      auto v = value.value_exact<int64_t>();
      if (!v || *v < 0 || (!zero_ok && *v == 0)) return config_error(path, full + " must be a non-negative integer");
      out = static_cast<uint64_t>(*v);
      return Ok{};
    };
    auto text = [&](std::string& out) -> Status {
      auto v = value.value<std::string>();
      if (!v) return config_error(path, full + " must be a string");
      out = *v;
      return Ok{};
    };
    auto flag = [&](bool& out) -> Status {
      auto v = value.value<bool>();
      if (!v) return config_error(path, full + " must be true or false");
      out = *v;
      return Ok{};
    };
    Status s = Ok{};
    if (k == "enabled") s = flag(cache.enabled);
    else if (k == "memory_bytes") s = number(cache.memory_bytes, true);
    else if (k == "disk") s = flag(cache.disk);
    else if (k == "directory") s = text(cache.directory);
    else if (k == "disk_bytes") s = number(cache.disk_bytes, false);
    else if (k == "redis") s = text(cache.redis);
    else if (k == "redis_ttl_seconds") s = number(cache.redis_ttl_seconds, false);
    else if (k == "lease_wait_ms") s = number(cache.lease_wait_ms, true);
    else if (k == "direct_reads") s = flag(cache.direct_reads);
    else return config_error(path, "unknown key " + full);
    if (!s) return s;
  }
  return Ok{};
}

// A table of scalars ([tls], [admission]): each key read by `read`, which
// answers nullopt for a key it does not know.
template <typename Read>
Status read_table(const toml::node& node, const std::string& path, const std::string& name, Read read) {
  const toml::table* t = node.as_table();
  if (!t) return config_error(path, "[" + name + "] must be a table");
  for (auto&& [key, value] : *t) {
    std::string full = name + "." + std::string(key.str());
    std::optional<Status> s = read(std::string(key.str()), value, full);
    if (!s) return config_error(path, "unknown key " + full);
    if (!*s) return *s;
  }
  return Ok{};
}

Status read_flag(const toml::node& node, const std::string& path, const std::string& key, bool& out) {
  auto v = node.value_exact<bool>();  // value<bool> would take 1 for true
  if (!v) return config_error(path, key + " must be true or false");
  out = *v;
  return Ok{};
}

// An integer in [min, max], for the keys whose range is narrower than their type's.
template <typename T>
Status read_ranged(const toml::node& node, const std::string& path, const std::string& key, int64_t min, int64_t max,
                   T& out) {
  auto v = node.value_exact<int64_t>();
  if (!v || *v < min || *v > max)
    return config_error(path, key + " must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  out = static_cast<T>(*v);
  return Ok{};
}

template <typename T>
Status read_value(const toml::node& node, const std::string& path, const std::string& key, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    auto v = node.value<std::string>();
    if (!v) return config_error(path, key + " must be a string");
    out = *v;
  } else {
    // value_exact: a float (2.5, 1e300) is no integer, and converting one
    // could overflow.
    auto v = node.value_exact<int64_t>();
    if (!v || *v <= 0 || static_cast<uint64_t>(*v) > std::numeric_limits<T>::max())
      return config_error(path, key + " must be a positive integer of at most " +
                                    std::to_string(std::numeric_limits<T>::max()));
    out = static_cast<T>(*v);
  }
  return Ok{};
}

}  // namespace

bool is_sandbox_mode(const std::string& mode) { return mode == "landlock" || mode == "off"; }

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
    std::string k(key.str());
    Status s = Ok{};
    if (k == "socket") s = read_value(node, path, k, config.socket_path);
    else if (k == "listen") s = read_value(node, path, k, config.listen_address);
    else if (k == "insecure_listen") s = read_flag(node, path, k, config.insecure_listen);
    else if (k == "tls") {
      s = read_table(node, path, k,
                     [&](const std::string& key, const toml::node& value,
                         const std::string& full) -> std::optional<Status> {
                       if (key == "cert") return read_value(value, path, full, config.tls.cert_file);
                       if (key == "key") return read_value(value, path, full, config.tls.key_file);
                       if (key == "client_ca") return read_value(value, path, full, config.tls.client_ca_file);
                       return std::nullopt;
                     });
    }
    else if (k == "tenants") s = read_value(node, path, k, config.tenants_file);
    else if (k == "socket_requires_token") s = read_flag(node, path, k, config.socket_requires_token);
    else if (k == "admission") {
      AdmissionConfig& admission = config.admission;
      s = read_table(node, path, k,
                     [&](const std::string& key, const toml::node& value,
                         const std::string& full) -> std::optional<Status> {
                       if (key == "max_pending_compiles")
                         return read_value(value, path, full, admission.max_pending_compiles);
                       if (key == "max_pending_per_tenant")
                         return read_value(value, path, full, admission.max_pending_per_tenant);
                       if (key == "retry_after_ms") return read_value(value, path, full, admission.retry_after_ms);
                       return std::nullopt;
                     });
    }
    else if (k == "metrics_port") s = read_ranged(node, path, k, 0, 65535, config.metrics_port);
    else if (k == "metrics_address") s = read_value(node, path, k, config.metrics_address);
    else if (k == "log_file") s = read_value(node, path, k, config.log_file);
    else if (k == "drain_timeout_s") s = read_ranged(node, path, k, 1, 3600, config.drain_timeout_s);
    else if (k == "socket_group") s = read_value(node, path, k, config.socket_group);
    else if (k == "default_target") s = read_value(node, path, k, config.default_target);
    else if (k == "cuda_home") s = read_value(node, path, k, config.cuda_home);
    else if (k == "log_level") s = read_value(node, path, k, config.log_level);
    else if (k == "sandbox") {
      s = read_value(node, path, k, config.sandbox);
      if (s && !is_sandbox_mode(config.sandbox))
        return config_error(path, "sandbox must be \"landlock\" or \"off\", not \"" + config.sandbox + "\"");
    }
    else if (k == "plugins") s = read_strings(node, path, k, config.plugins);
    else if (k == "llvm_pass_plugins") s = read_strings(node, path, k, config.llvm_pass_plugins);
    else if (k == "toolkits") s = read_toolkits(node, path, config.toolkits);
    else if (k == "toolkit_paths") s = read_strings(node, path, k, config.toolkit_paths);
    else if (k == "local_toolkit_prefix") s = read_value(node, path, k, config.local_toolkit_prefix.emplace());
    else if (k == "toolkit_policy") {
      std::string text;
      s = read_value(node, path, k, text);
      std::optional<ToolkitPolicy> policy = parse_toolkit_policy(text);
      if (s && !policy)
        return config_error(path, "toolkit_policy must be \"system-first\" or \"newest\", not \"" + text + "\"");
      if (policy) config.toolkit_policy = *policy;
    }
    else if (k == "cache") s = read_cache(node, path, config.cache);
    else if (k == "compile_workers") {
      auto v = node.value_exact<int64_t>();  // 0 is meaningful: compile in the daemon
      if (!v || *v < 0 || *v > 1024) return config_error(path, "compile_workers must be an integer from 0 to 1024");
      config.compile_workers = static_cast<uint32_t>(*v);
    }
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
        else if (lk == "max_blob_bytes") s = read_value(lnode, path, full, config.max_blob_bytes);
        else if (lk == "compile_timeout_s") s = read_value(lnode, path, full, config.compile_timeout_s);
        else if (lk == "compile_memory_bytes") s = read_value(lnode, path, full, config.compile_bounds.memory_bytes);
        else if (lk == "compile_cpu_seconds") s = read_value(lnode, path, full, config.compile_bounds.cpu_seconds);
        else if (lk == "compile_open_files") s = read_value(lnode, path, full, config.compile_bounds.open_files);
        else if (lk == "compile_output_bytes") s = read_value(lnode, path, full, config.compile_bounds.output_bytes);
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
