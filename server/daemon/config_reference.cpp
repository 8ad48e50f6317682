// The configuration reference, expanded from the key table (see config_reference.h).
#include "server/daemon/config_reference.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "server/config/config_keys.h"
#include "server/config/daemon_config.h"

namespace kjit {
namespace {

// Indexes into config_topics().
enum TopicIndex : size_t {
  k_listening,
  k_tenants,
  k_metrics,
  k_toolkits,
  k_triton,
  k_workers,
  k_limits,
  k_cache,
  k_warmup,
  k_pipelines,
  k_shared_hosts,
  k_other,
};

// Which topic a key belongs to: an exact path, or a prefix ending in "." or
// "_". The longest match wins, so "limits.compile_" outranks "limits.".
struct TopicRule {
  std::string_view match;
  TopicIndex topic;
};
constexpr TopicRule k_topic_rules[] = {
    {"socket", k_listening},
    {"socket_group", k_listening},
    {"listen", k_listening},
    {"insecure_listen", k_listening},
    {"tls.", k_listening},
    {"tenants", k_tenants},
    {"socket_requires_token", k_tenants},
    {"admin_group", k_shared_hosts},
    {"admission.", k_tenants},
    {"metrics_", k_metrics},
    {"log_file", k_metrics},
    {"log_level", k_metrics},
    {"drain_timeout_s", k_metrics},
    {"default_target", k_toolkits},
    {"cuda_home", k_toolkits},
    {"toolkit_policy", k_toolkits},
    {"local_toolkit_prefix", k_toolkits},
    {"tileiras", k_toolkits},
    {"triton.", k_triton},
    {"compile_workers", k_workers},
    {"sandbox", k_workers},
    {"pch", k_workers},
    {"pch_bytes", k_workers},
    {"limits.compile_", k_workers},
    {"limits.", k_limits},
    {"cache.", k_cache},
    {"after_warmup", k_warmup},
    {"fleet.", k_warmup},
};

// Defaults DaemonConfig cannot state as one value on every machine (they
// are worked out at start), and the flag of a key its row leaves to the
// command line.
struct KeyNote {
  std::string_view path;
  std::string_view default_text;  // empty: the row's own default
  std::string_view flag;          // empty: the row's flag
};
constexpr KeyNote k_key_notes[] = {
    {"socket", "`$XDG_RUNTIME_DIR/kjit/kjitd.sock`, or `/tmp/kjit-$UID/kjitd.sock`", ""},
    {"socket_group", "the daemon's group", ""},
    {"insecure_listen", "", "`--insecure-listen [HOST:PORT]`"},
    {"cuda_home", "`$CUDA_HOME`, then `/usr/local/cuda`", ""},
    {"local_toolkit_prefix", "the build's `.deps/cuda-wheels`", ""},
    {"tileiras", "searched: `nvidia/cuNN/bin/tileiras` in `toolkit_paths`, then `.deps/tileiras`", ""},
    {"compile_workers", "one per core, 2 at least", ""},
    {"cache.directory", "`$XDG_CACHE_HOME/kjit`, or `~/.cache/kjit`", ""},
    {"triton.descriptions_dir", "`triton-builds/` in `cache.directory`; none without a disk cache", ""},
};

// Keys daemon_config.cpp reads itself (arrays and tables), not rows.
struct StructuredKey {
  std::string_view key;
  std::string_view what;
  TopicIndex topic;
};
constexpr StructuredKey k_structured_keys[] = {
    {"plugins", "kjit plugin libraries to load (also `--plugin` and `$KJIT_PLUGIN_PATHS`); default `[]`", k_pipelines},
    {"llvm_pass_plugins", "LLVM pass plugins, whose passes `llvm-passes` may name; default `[]`", k_pipelines},
    {"[pipelines.NAME]",
     "a named pipeline: `inputs`, `args` and `[[pipelines.NAME.stages]]` (`name`, `takes`, "
     "`gives`, `passes`)",
     k_pipelines},
    {"[[edits]]",
     "an edit of a pipeline: `op` (insert-before, insert-after, disable, replace, override-stage), "
     "`anchor`, `pass`, `pipeline`",
     k_pipelines},
    {"toolkit_paths",
     "more CUDA toolkits: Python environment prefixes, `site-packages`, `nvidia/cu13` "
     "directories; default `[]`",
     k_toolkits},
    {"[[toolkits]] from, to, cuda_home", "a CUDA toolkit pinned to a range of targets", k_toolkits},
    {"[triton] builds",
     "Triton builds (virtual environments, or their `bin/python`), before every environment "
     "under `.deps/triton-builds`; default `[]`",
     k_triton},
    {"[triton] plugins",
     "Triton pass plugin libraries (absolute paths) the builds that load plugins with "
     "`passes.plugin.extend_with` (Triton 3.9) load; their digests are in every Triton key; default `[]`",
     k_triton},
    {"[[triton.plugin]] builds, library, package, environment",
     "a plugin for the builds it names (`builds`, required: a plugin is built for one Triton release): a pass "
     "plugin `library` (absolute path), loaded the way that release loads plugins, or settings for an installed "
     "plugin `package` (`\"triton-utlx\"`); `environment`: the variables it reads "
     "(`{ UTLX_NO_LAYOUT_PROPAGATION = \"1\" }`), set in the build's interpreters from here only. Its name, "
     "digest and variables are in the key of the builds' compiles. Checked at start and by `--check-config`: a "
     "plugin a build cannot load refuses the start; default none",
     k_triton},
    {"[triton] prestart_builds",
     "more builds the prestarted Triton worker imports and warms besides the default one (names as "
     "`kjit toolkits` lists them; `\"*\"`: every build found), so that a process on another build does not "
     "wait for its interpreter; default `[]`",
     k_triton},
    {"[cache.reapi] headers",
     "more headers sent with every call to the REAPI server, each `\"Name: value\"`; default `[]`", k_cache},
    {"[fleet] targets",
     "the GPU types the fleet runs: a request compiled for one is built in the background for "
     "the others of its vendor; default `[]`",
     k_warmup},
    {"[[blob_sharing]] group, uids, namespace",
     "socket users (members of `group`, or `uids`) who keep their "
     "client blobs together in `namespace`",
     k_shared_hosts},
};

const KeyNote* note_of(std::string_view path) {
  for (const KeyNote& note : k_key_notes)
    if (note.path == path) return &note;
  return nullptr;
}

// "[cache] disk_bytes", as the TOML file spells it; a nested table's key is
// "[cache.reapi] endpoint".
std::string toml_spelling(std::string_view path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return std::string(path);
  return fmt::format("[{}] {}", path.substr(0, dot), path.substr(dot + 1));
}

std::string type_text(const ConfigKey& key) {
  switch (key.kind) {
    case ConfigKind::boolean:
      return "boolean";
    case ConfigKind::text: {
      if (key.choices.empty()) return "string";
      std::string out = "one of";
      for (size_t i = 0; i < key.choices.size(); ++i) out += fmt::format("{} `{}`", i ? "," : "", key.choices[i]);
      return out;
    }
    case ConfigKind::integer:
      if (key.max == std::numeric_limits<int64_t>::max()) return fmt::format("integer, {} or more", key.min);
      return fmt::format("integer, {} to {}", key.min, key.max);
  }
  return "value";
}

// 268435456 -> "268435456 (256 MiB)": byte counts are read in binary units.
std::string with_binary_unit(int64_t value) {
  constexpr std::string_view k_units[] = {"KiB", "MiB", "GiB", "TiB"};
  std::string unit;
  int64_t scaled = value;
  for (std::string_view name : k_units) {
    if (scaled < 1024 || scaled % 1024) break;
    scaled /= 1024;
    unit = name;
  }
  return unit.empty() ? std::to_string(value) : fmt::format("{} ({} {})", value, scaled, unit);
}

std::string default_text(const ConfigKey& key) {
  if (const KeyNote* note = note_of(key.path); note && !note->default_text.empty())
    return std::string(note->default_text);
  const DaemonConfig defaults;
  const ConfigValue value = key.get(defaults);
  if (const int64_t* number = std::get_if<int64_t>(&value)) {
    const bool bytes = key.path.ends_with("_bytes");
    return "`" + (bytes ? with_binary_unit(*number) : std::to_string(*number)) + "`";
  }
  const std::string text = config_value_text(key, defaults);
  if (text.empty()) return "none";
  return key.kind == ConfigKind::text ? "`\"" + text + "\"`" : "`" + text + "`";
}

std::string flag_text(const ConfigKey& key) {
  if (const KeyNote* note = note_of(key.path); note && !note->flag.empty()) return std::string(note->flag);
  return key.flag.empty() ? "" : "`" + std::string(key.flag) + "`";
}

// A table cell: a pipe would end it, and <token> would read as HTML.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

size_t topic_index_of(std::string_view path) {
  size_t best = k_other, best_length = 0;
  for (const TopicRule& rule : k_topic_rules) {
    const bool prefix = rule.match.ends_with('.') || rule.match.ends_with('_');
    const bool matches = prefix ? path.starts_with(rule.match) : path == rule.match;
    if (matches && rule.match.size() > best_length) {
      best = rule.topic;
      best_length = rule.match.size();
    }
  }
  return best;
}

}  // namespace

const std::vector<ConfigTopic>& config_topics() {
  // In TopicIndex order.
  static const std::vector<ConfigTopic> k_topics = {
      {"Listening: the socket, TCP and TLS", "operating.md#listening-the-socket-tcp-and-tls"},
      {"Tenants, tokens and admission", "operating.md#tenants-tokens-namespaces-quotas"},
      {"Metrics, logs and stopping", "operating.md#metrics-logs-and-health"},
      {"CUDA toolkits and targets", "targets-and-toolchains.md#cuda-toolkits-and-many-targets"},
      {"Triton builds", "targets-and-toolchains.md#triton-ir-tritons-own-pipeline-in-kjitd"},
      {"Compile workers and their bounds", "operating.md#compile-workers-confined-and-bounded"},
      {"Request limits", "operating.md#what-a-request-can-and-cannot-do"},
      {"The cache", "cache.md#tiers"},
      {"Warm-up, seals and fleet targets", "cache.md#recipes-and-warm-up"},
      {"Pipelines and plugins", "pipelines-and-plugins.md#pipelines"},
      {"Shared hosts", "operating.md#shared-hosts-many-local-users-on-one-socket"},
      {"Other keys", "operating.md#the-configuration-file"},
  };
  return k_topics;
}

const ConfigTopic& config_topic_of(std::string_view path) {
  return config_topics()[topic_index_of(path)];
}

std::string config_reference_markdown() {
  std::string out;
  out +=
      "# Configuration reference\n"
      "\n"
      "<!-- Generated by `kjitd --print-config-reference` from server/config/config_keys.cpp and\n"
      "     server/daemon/config_reference.cpp. Do not edit: run scripts/generate_references.sh. -->\n"
      "\n"
      "Every key of kjitd's TOML configuration (`kjitd --config FILE`), with its flag, type, default,\n"
      "whether a reload (SIGHUP, `kjit admin reload`) puts a new value in force or it waits for a restart,\n"
      "and what it does. Flags override the file; every key is optional; an unknown key is an error, so a\n"
      "typo never leaves a default in force. A key is checked the same way from the file and from its flag,\n"
      "and 0 means 0 wherever a key's range takes it. `kjitd --config FILE --check-config` prints every key\n"
      "below with the value a start would use. How to use them: [operating "
      "kjitd](operating.md#the-configuration-file).\n"
      "A key `[cache] disk_bytes` is written in the file as `disk_bytes = ...` under a `[cache]` table; kjitd\n"
      "names it `cache.disk_bytes` in messages and in `kjit health --verbose`.\n";
  const std::vector<ConfigKey>& keys = config_keys();
  const std::vector<ConfigTopic>& topics = config_topics();
  for (size_t topic = 0; topic < topics.size(); ++topic) {
    std::string rows;
    for (const ConfigKey& key : keys) {
      if (topic_index_of(key.path) != topic) continue;
      rows += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", toml_spelling(key.path), flag_text(key),
                          type_text(key), default_text(key), key.reloadable ? "reload" : "restart", cell(key.help));
    }
    std::string structured;
    for (const StructuredKey& key : k_structured_keys)
      if (key.topic == topic) structured += fmt::format("| `{}` | {} |\n", key.key, cell(key.what));
    if (rows.empty() && structured.empty()) continue;
    out += fmt::format("\n## {}\n\nIn the manual: [docs/{}]({}).\n", topics[topic].title, topics[topic].page,
                       topics[topic].page);
    if (!rows.empty()) out += "\n| key | flag | type | default | applied | what |\n|---|---|---|---|---|---|\n" + rows;
    if (!structured.empty())
      out += "\nRead by the configuration loader itself, each needs a restart:\n\n| key | what |\n|---|---|\n" +
             structured;
  }
  return out;
}

}  // namespace kjit
