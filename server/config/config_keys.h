// Every scalar key of kjitd's configuration, one row each: where it lives in
// the TOML file, its flag, its type and range, its help. The file's loader
// and the command line both set a key through its row, so a value is checked
// identically wherever it comes from (0 means 0 where the range takes 0),
// and the README's configuration table is checked against the rows.
// Structured keys (arrays of plugins and paths, [[toolkits]], pipelines,
// edits) are read by daemon_config.cpp itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kjit/status.h"
#include "server/config/daemon_config.h"

namespace kjit {

enum class ConfigKind { text, boolean, integer };

using ConfigValue = std::variant<std::string, bool, int64_t>;

struct ConfigKey {
  std::string_view path{};  // "limits.max_input_bytes" is [limits] max_input_bytes
  std::string_view flag{};  // "--max-input-bytes"; empty: the file alone sets it
  ConfigKind kind = ConfigKind::text;
  std::string_view help{};
  int64_t min = 0, max = 0;                  // integer: the accepted range, both ends included
  std::vector<std::string_view> choices{};   // text: the only accepted values; empty: any
  bool flag_sets = true;                   // boolean: the value its bare flag sets (--no-cache: false)
  // Whether a reload (SIGHUP, `kjit admin reload`) puts a new value in
  // force at once; any other key's new value waits for a restart.
  bool reloadable = false;
  void (*set)(DaemonConfig&, const ConfigValue&) = nullptr;  // a value already checked by check()
  ConfigValue (*get)(const DaemonConfig&) = nullptr;
};

// The rows, in the order of the README's table.
const std::vector<ConfigKey>& config_keys();

// The row of `path` ("cache.disk_bytes"), or null.
const ConfigKey* find_config_key(std::string_view path);

// What the key takes: "an integer from 1 to 3600", "a string", "true or false".
std::string config_value_rule(const ConfigKey& key);

// Whether `value` is of the key's kind and within its range or choices; the
// error names the key as `where` says it ("cache.disk_bytes", "--disk-cache-bytes").
Status check_config_value(const ConfigKey& key, const ConfigValue& value, std::string_view where);

// A flag's text as the key's value: an integer in decimal, else the text.
Result<ConfigValue> parse_config_flag(const ConfigKey& key, const std::string& text);

// The key's value in config as kjitd shows it (kjit health --verbose,
// --check-config): an integer in decimal, true or false, text as it is.
std::string config_value_text(const ConfigKey& key, const DaemonConfig& config);

// check_config_value, then the row's set.
Status set_config_value(DaemonConfig& config, const ConfigKey& key, const ConfigValue& value, std::string_view where);

// The gRPC receive limit that admits the largest request every configured
// limit allows (a compile's input and headers, a blob, a launch's buffers),
// with room for the rest of the message.
uint64_t largest_request_bytes(const DaemonConfig& config);

}  // namespace kjit
