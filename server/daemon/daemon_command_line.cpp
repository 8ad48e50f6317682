#include "server/daemon/daemon_command_line.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdlib>
#include <filesystem>

#include "server/access/listener_credentials.h"
#include "server/config/pipeline_setup.h"
#include "server/workers/worker_confinement.h"
#include "target/target.h"

namespace kjit {
namespace {

// spdlog's names for its levels; from_str turns any other name into "off",
// which would silently silence the daemon.
bool is_log_level(const std::string& name) {
  static constexpr std::array<std::string_view, 9> k_levels{"trace", "debug", "info",     "warn", "warning",
                                                            "error", "err",   "critical", "off"};
  for (std::string_view level : k_levels)
    if (name == level) return true;
  return false;
}

// What the file and the flags may each be right about alone but not give
// together, checked once they are merged.
Status check_merged(const DaemonConfig& config) {
  if (!is_log_level(config.log_level))
    return make_error(ErrorCode::invalid_argument,
                      "log level \"" + config.log_level + "\" is none of trace, debug, info, warn, error, critical, off");
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
  return Ok{};
}

}  // namespace

std::optional<DaemonCommandLine> read_command_line(int argc, char** argv, int& exit_code) {
  DaemonCommandLine line;
  CLI::App app{"kjitd — the kjit JIT kernel compilation daemon"};
  std::string config_file;
  DaemonConfig flags;
  uint64_t max_input_bytes = 0;
  app.add_option("--config", config_file, "TOML configuration file")->check(CLI::ExistingFile);
  app.add_option("--socket", flags.socket_path, "unix socket to listen on (default: $XDG_RUNTIME_DIR/kjit/kjitd.sock)");
  app.add_option("--socket-group", flags.socket_group, "group that may connect to the socket (mode 0660) besides the daemon's user");
  app.add_option("--listen", flags.listen_address,
                 "also listen on TCP HOST:PORT, with TLS (--tls-cert/--tls-key) or, with --insecure-listen, in "
                 "plaintext");
  app.add_option("--tls-cert", flags.tls.cert_file, "PEM certificate (chain) of the TCP listener");
  app.add_option("--tls-key", flags.tls.key_file, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", flags.tls.client_ca_file,
                 "PEM CA: TCP clients must present a certificate it signed (mutual TLS)");
  std::string insecure_listen;
  app.add_option("--insecure-listen", insecure_listen,
                 "allow --listen without TLS, or with HOST:PORT listen there in plaintext: anyone who can reach "
                 "the address can use the daemon")
      ->expected(0, 1);
  app.add_option("--tenants", flags.tenants_file, "TOML file of tenants and their token digests")
      ->check(CLI::ExistingFile);
  app.add_flag("--socket-requires-token", flags.socket_requires_token,
               "with --tenants: requests on the unix socket need a token too");
  app.add_option("--metrics-port", flags.metrics_port, "serve Prometheus metrics on this port (0: none)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-address", flags.metrics_address, "address of the metrics port (default 127.0.0.1)");
  app.add_option("--log-file", flags.log_file, "log to this file instead of stderr (SIGHUP reopens it)");
  app.add_option("--drain-timeout", flags.drain_timeout_s,
                 "on SIGTERM, how many seconds requests in flight get (default 30)")
      ->check(CLI::Range(1, 3600));
  app.add_option("--max-pending-compiles", flags.admission.max_pending_compiles,
                 "compiles waiting or running at once, all tenants together (default 256)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-pending-per-tenant", flags.admission.max_pending_per_tenant,
                 "compiles waiting or running at once for one tenant (default 64)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cuda-home", flags.cuda_home, "CUDA toolkit directory (default: $CUDA_HOME or the build's)");
  app.add_option("--default-target", flags.default_target, "target for requests that name none");
  app.add_option("--max-input-bytes", max_input_bytes, "largest accepted input (default 16 MiB)");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error");
  std::vector<std::string> plugin_flags;
  std::string cache_dir, redis;
  bool no_disk_cache = false, no_cache = false, no_direct_reads = false;
  uint64_t memory_cache_bytes = 0, disk_cache_bytes = 0;
  bool memory_cache_bytes_given = false;
  app.add_option("--cache-dir", cache_dir, "disk cache directory (default: $XDG_CACHE_HOME/kjit or ~/.cache/kjit)");
  app.add_flag("--no-disk-cache", no_disk_cache, "no disk tier");
  app.add_flag("--no-direct-reads", no_direct_reads,
               "publish no direct-read manifest: local clients always ask over the socket");
  app.add_flag("--no-cache", no_cache, "no cache at all: every request compiles");
  app.add_option("--memory-cache-bytes", memory_cache_bytes, "memory tier size in bytes (0: none)")
      ->each([&](const std::string&) { memory_cache_bytes_given = true; });
  app.add_option("--disk-cache-bytes", disk_cache_bytes, "disk tier bound in bytes");
  app.add_option("--redis", redis, "Redis tier HOST:PORT (or a unix socket path), shared by a fleet");
  app.add_option("--plugin", plugin_flags, "load a kjit plugin (repeatable; also KJIT_PLUGIN_PATHS)");
  uint32_t compile_workers = 0;
  uint64_t compile_timeout_s = 0;
  app.add_option("--compile-workers", compile_workers,
                 "compile in at most N worker processes (default: one per core; 0: inside the daemon)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--compile-timeout", compile_timeout_s, "stop a compile after this many seconds (default 300)")
      ->check(CLI::PositiveNumber);
  std::string sandbox;
  app.add_option("--sandbox", sandbox, "confine compile workers: landlock (default) or off")
      ->check(CLI::IsMember({"landlock", "off"}));
  CompileBounds bounds;
  app.add_option("--compile-memory", bounds.memory_bytes,
                 "address space one compile may add to its worker, in bytes (default 4 GiB)")
      ->check(CLI::PositiveNumber);
  app.add_option("--compile-cpu-seconds", bounds.cpu_seconds, "CPU time of one compile (default 300)")
      ->check(CLI::PositiveNumber);
  app.add_option("--compile-open-files", bounds.open_files, "file descriptors of one worker (default 512)")
      ->check(CLI::Range(uint64_t{16}, uint64_t{1} << 20));
  app.add_option("--compile-output-bytes", bounds.output_bytes,
                 "largest artifact or file a compile may write (default 256 MiB)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--check-config", line.check_config,
               "load the configuration (file and flags) as a start would, print \"configuration OK\" or the "
               "error (exit code 2), and exit without serving");
  // Internal: kjitd starts its own compile workers with this (see compile_workers.h).
  int& worker_fd = line.worker_fd;
  app.add_option("--worker-fd", worker_fd)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e);
    return std::nullopt;
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
  if (!flags.socket_path.empty()) config.socket_path = flags.socket_path;
  if (!flags.socket_group.empty()) config.socket_group = flags.socket_group;
  if (!flags.listen_address.empty()) config.listen_address = flags.listen_address;
  if (app.count("--insecure-listen")) {
    config.insecure_listen = true;
    if (!insecure_listen.empty()) {
      // The address form means plaintext there: with --listen or TLS too, one of them would be ignored.
      if (!flags.listen_address.empty() || !flags.tls.cert_file.empty()) {
        fmt::print(stderr,
                   "kjitd: --insecure-listen HOST:PORT listens in plaintext; give --listen alone for TLS, "
                   "or a bare --insecure-listen with --listen\n");
        exit_code = 2;
        return std::nullopt;
      }
      config.listen_address = insecure_listen;
      config.tls = TlsConfig{};
    }
  }
  if (!flags.tls.cert_file.empty()) config.tls.cert_file = flags.tls.cert_file;
  if (!flags.tls.key_file.empty()) config.tls.key_file = flags.tls.key_file;
  if (!flags.tls.client_ca_file.empty()) config.tls.client_ca_file = flags.tls.client_ca_file;
  if (!flags.tenants_file.empty()) config.tenants_file = flags.tenants_file;
  if (flags.socket_requires_token) config.socket_requires_token = true;
  if (app.count("--metrics-port")) config.metrics_port = flags.metrics_port;
  if (app.count("--metrics-address")) config.metrics_address = flags.metrics_address;
  if (!flags.log_file.empty()) config.log_file = flags.log_file;
  if (app.count("--drain-timeout")) config.drain_timeout_s = flags.drain_timeout_s;
  if (app.count("--max-pending-compiles")) config.admission.max_pending_compiles = flags.admission.max_pending_compiles;
  if (app.count("--max-pending-per-tenant"))
    config.admission.max_pending_per_tenant = flags.admission.max_pending_per_tenant;
  if (!flags.cuda_home.empty()) config.cuda_home = flags.cuda_home;
  if (app.count("--default-target")) config.default_target = flags.default_target;
  if (app.count("--log-level")) config.log_level = flags.log_level;
  if (max_input_bytes) config.max_input_bytes = max_input_bytes;
  for (const std::string& path : plugin_flags) config.plugins.push_back(path);
  if (!cache_dir.empty()) config.cache.directory = cache_dir;
  if (no_disk_cache) config.cache.disk = false;
  if (no_cache) config.cache.enabled = false;
  if (no_direct_reads) config.cache.direct_reads = false;
  if (memory_cache_bytes_given) config.cache.memory_bytes = memory_cache_bytes;
  if (disk_cache_bytes) config.cache.disk_bytes = disk_cache_bytes;
  if (!redis.empty()) config.cache.redis = redis;
  if (app.count("--compile-workers")) config.compile_workers = compile_workers;
  if (compile_timeout_s) config.compile_timeout_s = compile_timeout_s;
  if (!sandbox.empty()) config.sandbox = sandbox;
  if (app.count("--compile-memory")) config.compile_bounds.memory_bytes = bounds.memory_bytes;
  if (app.count("--compile-cpu-seconds")) config.compile_bounds.cpu_seconds = bounds.cpu_seconds;
  if (app.count("--compile-open-files")) config.compile_bounds.open_files = bounds.open_files;
  if (app.count("--compile-output-bytes")) config.compile_bounds.output_bytes = bounds.output_bytes;
  if (Status s = check_merged(config); !s) {
    fmt::print(stderr, "kjitd{}: {}\n", worker_fd >= 0 ? " worker" : "", s.error().message);
    exit_code = 2;
    return std::nullopt;
  }
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
  // KJIT_PLUGIN_PATHS: colon-separated, like PATH; the daemon's environment,
  // never a request, decides what is loaded.
  if (const char* env = std::getenv("KJIT_PLUGIN_PATHS"); env && *env) {
    std::string paths = env;
    for (size_t start = 0; start <= paths.size();) {
      size_t end = paths.find(':', start);
      if (end == std::string::npos) end = paths.size();
      if (end > start) config.plugins.push_back(paths.substr(start, end - start));
      start = end + 1;
    }
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
  fmt::print("configuration OK\n");
  return 0;
}

}  // namespace kjit
