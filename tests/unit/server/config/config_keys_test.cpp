// The configuration's key table: its rows are sound (defaults in range,
// ranges that fit their fields), the file and the flags set a key through
// the same row with the same checks. docs/configuration-reference.md is
// generated from the rows (the test docs_references keeps it so).
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "server/config/config_keys.h"
#include "server/config/daemon_config.h"
#include "server/daemon/daemon_command_line.h"

namespace kjit {
namespace {

// read_command_line over `args`, as kjitd's own main would call it.
std::optional<DaemonCommandLine> command_line(std::vector<std::string> args, int& exit_code) {
  args.insert(args.begin(), "kjitd");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return read_command_line(static_cast<int>(argv.size()), argv.data(), exit_code);
}

Status load(const std::string& text) {
  DaemonConfig config;
  return load_config_text(text, "test.toml", config);
}

// "cache.disk_bytes" as the file spells it: [cache] then disk_bytes = ...
std::string toml_line(const ConfigKey& key, const std::string& value) {
  const std::string path(key.path);
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return path + " = " + value + "\n";
  return "[" + path.substr(0, dot) + "]\n" + path.substr(dot + 1) + " = " + value + "\n";
}

TEST(ConfigKeys, EveryDefaultIsWithinItsRow) {
  const DaemonConfig defaults;
  for (const ConfigKey& key : config_keys()) {
    ASSERT_TRUE(key.set && key.get) << key.path;
    EXPECT_TRUE(check_config_value(key, key.get(defaults), key.path)) << key.path;
  }
}

TEST(ConfigKeys, EveryRangeFitsItsField) {
  // Set to each end and read back: a range wider than the field would be cut.
  for (const ConfigKey& key : config_keys()) {
    if (key.kind != ConfigKind::integer) continue;
    for (int64_t end : {key.min, key.max}) {
      DaemonConfig config;
      ASSERT_TRUE(set_config_value(config, key, end, key.path)) << key.path;
      EXPECT_EQ(std::get<int64_t>(key.get(config)), end) << key.path;
    }
  }
}

TEST(ConfigKeys, PathsAndFlagsNameOneKeyEach) {
  std::set<std::string_view> paths, flags;
  for (const ConfigKey& key : config_keys()) {
    EXPECT_TRUE(paths.insert(key.path).second) << key.path;
    if (!key.flag.empty()) {
      EXPECT_TRUE(flags.insert(key.flag).second) << key.flag;
    }
    EXPECT_EQ(find_config_key(key.path), &key);
  }
  EXPECT_EQ(find_config_key("cache.no_such_key"), nullptr);
}

TEST(ConfigKeys, EveryFlagSetsItsKey) {
  for (const ConfigKey& key : config_keys()) {
    if (key.flag.empty()) continue;
    std::vector<std::string> args{std::string(key.flag)};
    ConfigValue expected;
    if (key.kind == ConfigKind::boolean) {
      expected = key.flag_sets;
    } else if (key.kind == ConfigKind::integer) {
      expected = key.min;
      args.push_back(std::to_string(key.min));
    } else {
      // A value the merged checks take (a target, a level, a choice).
      std::string text = key.choices.empty() ? "/some/value" : std::string(key.choices.back());
      if (key.path == "default_target") text = "cuda:80";
      if (key.path == "metrics_token_sha256") text = std::string(64, 'a');  // a digest
      if (key.path == "cache.reapi.endpoint") text = "grpc://cache:9092";
      if (key.path == "cache.reapi.tls_ca" || key.path == "cache.reapi.token_file") text = "/dev/null";  // readable
      expected = text;
      args.push_back(text);
    }
    // TLS files go together and need a listener.
    if (key.path == "tls.cert") args.insert(args.end(), {"--tls-key", "k", "--listen", "127.0.0.1:1"});
    if (key.path == "tls.key") args.insert(args.end(), {"--tls-cert", "c", "--listen", "127.0.0.1:1"});
    if (key.path == "tls.client_ca" || key.path == "metrics_tls")
      args.insert(args.end(), {"--tls-cert", "c", "--tls-key", "k", "--listen", "127.0.0.1:1"});
    // The REAPI tier's settings need its endpoint; a CA, a grpcs:// one.
    if (key.path == "cache.reapi.instance" || key.path == "cache.reapi.token_file")
      args.insert(args.end(), {"--reapi", "grpc://cache:9092"});
    if (key.path == "cache.reapi.tls_ca") args.insert(args.end(), {"--reapi", "grpcs://cache:9092"});
    int exit_code = 0;
    std::optional<DaemonCommandLine> line = command_line(args, exit_code);
    ASSERT_TRUE(line) << key.flag << " was refused (exit " << exit_code << ")";
    EXPECT_EQ(key.get(line->config), expected) << key.flag;
  }
}

TEST(ConfigKeys, AFlagIsCheckedAsTheFileIs) {
  // Each bad value is refused from the file and as a flag, naming the key.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"cache.disk_bytes", "0"},             // the disk tier's bound cannot be 0 (no disk tier: disk = false)
      {"limits.compile_open_files", "8"},    // a worker needs 16 descriptors at least
      {"limits.compile_open_files", "2000000"},
      {"metrics_port", "70000"},
      {"drain_timeout_s", "0"},
      {"compile_workers", "1025"},
      {"limits.max_input_bytes", "-1"},
  };
  for (const auto& [path, value] : bad) {
    const ConfigKey* key = find_config_key(path);
    ASSERT_TRUE(key) << path;
    Status from_file = load(toml_line(*key, value));
    ASSERT_FALSE(from_file) << path << " = " << value << " was taken from the file";
    EXPECT_NE(from_file.error().message.find(path), std::string::npos) << from_file.error().message;
    if (key->flag.empty()) continue;
    int exit_code = 0;
    EXPECT_FALSE(command_line({std::string(key->flag), value}, exit_code)) << key->flag << " " << value;
    EXPECT_EQ(exit_code, 2) << key->flag;
  }
}

TEST(ConfigKeys, ZeroIsZeroWhereTheRangeTakesIt) {
  int exit_code = 0;
  std::optional<DaemonCommandLine> line = command_line({"--memory-cache-bytes", "0", "--metrics-port", "0"}, exit_code);
  ASSERT_TRUE(line);
  EXPECT_EQ(line->config.cache.memory_bytes, 0u);
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("[cache]\nmemory_bytes = 0\nlease_wait_ms = 0\n", "t", config));
  EXPECT_EQ(config.cache.memory_bytes, 0u);
  EXPECT_EQ(config.cache.lease_wait_ms, 0u);
}

TEST(ConfigKeys, TheTransportAdmitsTheLargestRequestOfEveryLimit) {
  DaemonConfig config;
  config.max_input_bytes = 1 << 20;
  config.max_header_bytes = 1 << 20;
  config.max_blob_bytes = 1 << 20;
  config.max_launch_bytes = 1 << 20;
  const uint64_t base = largest_request_bytes(config);
  EXPECT_GE(base, 2u << 20);
  for (uint64_t DaemonConfig::*limit : {&DaemonConfig::max_input_bytes, &DaemonConfig::max_header_bytes,
                                        &DaemonConfig::max_blob_bytes, &DaemonConfig::max_launch_bytes}) {
    DaemonConfig raised = config;
    raised.*limit = 300u << 20;
    EXPECT_GE(largest_request_bytes(raised), 300u << 20);
  }
}

}  // namespace
}  // namespace kjit
