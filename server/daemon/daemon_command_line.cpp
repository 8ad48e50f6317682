#include "server/daemon/daemon_command_line.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "backends/triton/triton_discovery.h"
#include "cache/reapi_connection.h"
#include "server/access/listener_credentials.h"
#include "server/config/config_keys.h"
#include "server/config/pipeline_setup.h"
#include "server/daemon/config_reference.h"
#include "server/daemon/metrics_reference.h"
#include "server/workers/worker_confinement.h"
#include "target/target.h"

namespace kjit {
namespace {

// What the file and the flags may each be right about alone but not give
// together, checked once they are merged.
Status check_merged(const DaemonConfig& config) {
  if (Result<Target> target = parse_target(config.default_target); !target)
    return make_error(ErrorCode::invalid_argument, "default target: " + target.error().message);
  const TlsConfig& tls = config.tls;
  if (tls.cert_file.empty() != tls.key_file.empty())
    return make_error(ErrorCode::invalid_argument,
                      "TLS needs both a certificate and its key (--tls-cert and --tls-key, or [tls] cert and key)");
  if (!tls.client_ca_file.empty() && tls.cert_file.empty())
    return make_error(ErrorCode::invalid_argument,
                      "a TLS client CA (--tls-client-ca) needs the daemon's own certificate and key too");
  if (!tls.cert_file.empty() && config.listen_address.empty())
    return make_error(ErrorCode::invalid_argument,
                      "TLS files are given but no TCP address to use them on (--listen HOST:PORT)");
  const std::string& digest = config.metrics_token_sha256;
  if (!digest.empty() && (digest.size() != 64 || digest.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos))
    return make_error(ErrorCode::invalid_argument,
                      "metrics_token_sha256 must be 64 hex digits: the SHA-256 of the token (sha256sum), never the "
                      "token itself");
  if (config.metrics_tls && tls.cert_file.empty())
    return make_error(ErrorCode::invalid_argument,
                      "metrics_tls serves the TCP listener's certificate: it needs --tls-cert and --tls-key");
  const ReapiConfig& reapi = config.cache.reapi;
  if (!reapi.endpoint.empty()) {
    // Checked here, not when the tier opens: a wrong endpoint or an
    // unreadable file is the configuration's error, not an outage.
    ReapiConnection::Options options;
    options.endpoint = reapi.endpoint;
    options.tls_ca_file = reapi.tls_ca;
    options.token_file = reapi.token_file;
    if (Result<std::shared_ptr<ReapiConnection>> opened = ReapiConnection::open(options); !opened)
      return make_error(ErrorCode::invalid_argument, "[cache.reapi]: " + opened.error().message);
    if (!reapi.tls_ca.empty() && !reapi.endpoint.starts_with("grpcs://"))
      return make_error(ErrorCode::invalid_argument,
                        "[cache.reapi] tls_ca is for a grpcs:// endpoint; " + reapi.endpoint + " is not one");
  } else if (!reapi.instance.empty() || !reapi.tls_ca.empty() || !reapi.token_file.empty() ||
             !reapi.headers.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "[cache.reapi] settings are given but no endpoint (--reapi grpc://HOST:PORT, or [cache.reapi] "
                      "endpoint)");
  }
  return Ok{};
}

// What the command line adds to the file, kept so that a reload reads the
// file again under the same flags.
struct ConfigSources {
  std::vector<std::pair<const ConfigKey*, ConfigValue>> flags;  // each key's flag given, checked
  bool insecure_listen = false;
  std::string insecure_listen_address;  // --insecure-listen HOST:PORT: plaintext there, no TLS
  std::vector<std::string> plugins;     // --plugin, then $KJIT_PLUGIN_PATHS
};

// The flags over a configuration read from the file (or a worker's text),
// then the checks of what they give together.
Status apply_sources(DaemonConfig& config, const ConfigSources& sources) {
  for (const auto& [key, value] : sources.flags)
    if (Status s = set_config_value(config, *key, value, key->flag); !s) return s;
  if (sources.insecure_listen) {
    config.insecure_listen = true;
    if (!sources.insecure_listen_address.empty()) {
      config.listen_address = sources.insecure_listen_address;
      config.tls = TlsConfig{};
    }
  }
  for (const std::string& path : sources.plugins) config.plugins.push_back(path);
  return check_merged(config);
}

}  // namespace

std::optional<DaemonCommandLine> read_command_line(int argc, char** argv, int& exit_code) {
  DaemonCommandLine line;
  CLI::App app{"kjitd — the kjit JIT kernel compilation daemon"};
  app.footer(
      "Options are grouped as the manual is; each group names its page. Every option but --config,\n"
      "--plugin, --insecure-listen HOST:PORT and the checks sets a configuration key: docs/configuration-reference.md\n"
      "lists them with their TOML names, defaults and whether a reload applies them; docs/operating.md\n"
      "is the manual for running kjitd.");
  // A group's heading names the manual page its options are explained on.
  const auto group_of = [](const ConfigTopic& topic) {
    return fmt::format("{} (docs/{})", topic.title, topic.page);
  };
  const std::string k_checks = "Configuration files and checks (docs/configuration-reference.md)";
  std::string config_file;
  app.add_option("--config", config_file, "TOML configuration file")->check(CLI::ExistingFile)->group(k_checks);
  // One flag per key that has one, read as text and set through the key's
  // row after the file: the same checks as the file's, and 0 means 0.
  // Added topic by topic, so that --help shows them as the manual groups them.
  const std::vector<ConfigKey>& keys = config_keys();
  std::vector<std::string> flag_text(keys.size());
  for (const ConfigTopic& topic : config_topics()) {
    for (size_t i = 0; i < keys.size(); ++i) {
      const ConfigKey& key = keys[i];
      if (key.flag.empty() || &config_topic_of(key.path) != &topic) continue;
      const std::string flag(key.flag), help(key.help);
      if (key.kind == ConfigKind::boolean)
        app.add_flag(flag, help)->group(group_of(topic));
      else
        app.add_option(flag, flag_text[i], help)->group(group_of(topic));
    }
  }
  std::string insecure_listen;
  app.add_option("--insecure-listen", insecure_listen,
                 "allow --listen without TLS, or with HOST:PORT listen there in plaintext: anyone who can reach "
                 "the address can use the daemon")
      ->expected(0, 1)
      ->group(group_of(config_topic_of("insecure_listen")));
  std::vector<std::string> plugin_flags;
  app.add_option("--plugin", plugin_flags, "load a kjit plugin (repeatable; also KJIT_PLUGIN_PATHS)")
      ->group(fmt::format("Pipelines and plugins (docs/{})", config_topic_of("plugins").page));
  app.add_flag("--check-config", line.check_config,
               "load the configuration (file and flags) as a start would, print \"configuration OK\" or the "
               "error (exit code 2), and exit without serving")
      ->group(k_checks);
  bool print_config_reference = false, print_metrics_reference = false;
  app.add_flag("--print-config-reference", print_config_reference,
               "print docs/configuration-reference.md (every key, from the key table) and exit")
      ->group(k_checks);
  app.add_flag("--print-metrics-reference", print_metrics_reference,
               "print docs/metrics-reference.md (every metric kjitd exports) and exit")
      ->group(k_checks);
  // Internal: kjitd starts its own compile workers with this (see compile_workers.h).
  int& worker_fd = line.worker_fd;
  app.add_option("--worker-fd", worker_fd)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e);
    return std::nullopt;
  }
  if (print_config_reference || print_metrics_reference) {
    fmt::print("{}", print_config_reference ? config_reference_markdown() : metrics_reference_markdown());
    exit_code = 0;
    return std::nullopt;
  }

  // The flags, checked once here; a reload applies the same values again.
  ConfigSources sources;
  for (size_t i = 0; i < keys.size(); ++i) {
    const ConfigKey& key = keys[i];
    if (key.flag.empty() || !app.count(std::string(key.flag))) continue;
    Result<ConfigValue> value =
        key.kind == ConfigKind::boolean ? Result<ConfigValue>(ConfigValue(key.flag_sets)) : parse_config_flag(key, flag_text[i]);
    Status checked = value ? check_config_value(key, *value, key.flag) : Status(value.error());
    if (!checked) {
      fmt::print(stderr, "kjitd: {}\n", checked.error().message);
      exit_code = 2;
      return std::nullopt;
    }
    sources.flags.emplace_back(&key, *value);
  }
  if (app.count("--insecure-listen")) {
    sources.insecure_listen = true;
    // The address form means plaintext there: with --listen or TLS too, one of them would be ignored.
    if (!insecure_listen.empty() && (app.count("--listen") || app.count("--tls-cert"))) {
      fmt::print(stderr,
                 "kjitd: --insecure-listen HOST:PORT listens in plaintext; give --listen alone for TLS, "
                 "or a bare --insecure-listen with --listen\n");
      exit_code = 2;
      return std::nullopt;
    }
    sources.insecure_listen_address = insecure_listen;
  }
  sources.plugins = plugin_flags;
  // KJIT_PLUGIN_PATHS: colon-separated, like PATH; the daemon's environment,
  // never a request, decides what is loaded.
  if (const char* env = std::getenv("KJIT_PLUGIN_PATHS"); env && *env) {
    std::string paths = env;
    for (size_t start = 0; start <= paths.size();) {
      size_t end = paths.find(':', start);
      if (end == std::string::npos) end = paths.size();
      if (end > start) sources.plugins.push_back(paths.substr(start, end - start));
      start = end + 1;
    }
  }

  DaemonConfig& config = line.config;
  if (worker_fd >= 0) {
    // A worker reads the configuration the daemon read at its start, not
    // the file as it may be now.
    Result<WorkerSetup> setup = read_worker_setup(worker_fd);
    if (!setup) {
      fmt::print(stderr, "kjitd worker: {}\n", setup.error().message);
      exit_code = 2;
      return std::nullopt;
    }
    line.worker_setup = setup.value();
    if (!setup->config_text.empty()) {
      if (Status s = load_config_text(setup->config_text, setup->config_path, config); !s) {
        fmt::print(stderr, "kjitd worker: {}\n", s.error().message);
        exit_code = 2;
        return std::nullopt;
      }
    }
  } else if (!config_file.empty()) {
    Result<std::string> text = read_config_file(config_file);
    Status loaded = text ? load_config_text(*text, config_file, config) : Status(text.error());
    if (!loaded) {
      fmt::print(stderr, "kjitd: {}\n", loaded.error().message);
      exit_code = 2;
      return std::nullopt;
    }
    line.worker_launch.config_text = std::move(text.value());
    line.worker_launch.config_path = config_file;
  }
  // Flags override the file.
  if (Status s = apply_sources(config, sources); !s) {
    fmt::print(stderr, "kjitd{}: {}\n", worker_fd >= 0 ? " worker" : "", s.error().message);
    exit_code = 2;
    return std::nullopt;
  }
  // Absolute: the daemon serves from another working directory.
  std::error_code ignored;
  if (!config_file.empty()) config_file = std::filesystem::absolute(config_file, ignored).string();
  if (worker_fd < 0)
    line.reread = [config_file, sources]() -> Result<DaemonConfig> {
      DaemonConfig again;
      if (!config_file.empty())
        if (Status s = load_config_file(config_file, again); !s) return s.error();
      if (Status s = apply_sources(again, sources); !s) return s.error();
      return again;
    };
  // The workers' command line: this one without --config (they are sent the
  // file's text as read now).
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--config") {
      ++i;
      continue;
    }
    if (arg.starts_with("--config=")) continue;
    line.worker_launch.command.emplace_back(arg);
  }
  {
    std::error_code ec;
    line.worker_launch.directory = std::filesystem::current_path(ec).string();
  }
  return line;
}

int check_configuration(const DaemonConfig& config) {
  if (Status s = check_tls_files(config); !s) {
    fmt::print(stderr, "kjitd: {}\n", s.error().message);
    return 2;
  }
  auto pipeline = make_compile_pipeline(config);
  if (!pipeline) {
    fmt::print(stderr, "kjitd: {}\n", pipeline.error().message);
    return 2;
  }
  if (config.compile_workers > 0) {
    Result<std::string> confinement = check_worker_confinement(config);
    if (!confinement) {
      fmt::print(stderr, "kjitd: {}\n", confinement.error().message);
      return 2;
    }
    spdlog::info("compile workers: up to {}, confinement {}", config.compile_workers, *confinement);
  }
  if (!config.triton_plugin_settings.empty()) {
    // As the daemon's start checks them: each plugin loaded by the builds it names.
    std::error_code ec;
    const std::string scratch =
        (std::filesystem::temp_directory_path(ec) / ("kjitd-check-triton-" + std::to_string(::getpid()))).string();
    Result<TritonDiscovery> found =
        discover_configured_triton_builds(triton_build_search_of(config), config.triton_plugin_settings, scratch,
                                          triton_descriptions_dir_of(config));
    if (!found) {
      fmt::print(stderr, "kjitd: {}\n", found.error().message);
      if (!found.error().log.empty()) fmt::print(stderr, "{}\n", found.error().log);
      return 2;
    }
    for (const TritonBuild& build : found->builds)
      for (const TritonConfiguredPlugin& plugin : build.configured_plugins)
        fmt::print("triton plugin {} for {}: loads\n", plugin.name(), build.name);
  }
  // What the daemon would serve with, key by key, as health --verbose shows it.
  for (const ConfigKey& key : config_keys()) {
    const std::string value = config_value_text(key, config);
    fmt::print("{} = {}\n", key.path, value.empty() ? "\"\"" : value);
  }
  fmt::print("configuration OK\n");
  return 0;
}

}  // namespace kjit
