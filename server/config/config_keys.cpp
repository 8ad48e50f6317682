// The configuration's scalar keys as one table (see config_keys.h).
#include "server/config/config_keys.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "pipeline/toolkit_policy.h"

namespace kjit {
namespace {

// TOML integers are signed 64-bit: no key takes more.
constexpr int64_t k_int64 = std::numeric_limits<int64_t>::max();
constexpr int64_t k_uint32 = std::numeric_limits<uint32_t>::max();

template <typename T>
void assign(T& field, const ConfigValue& value) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>)
    field = std::get<T>(value);
  else
    field = static_cast<T>(std::get<int64_t>(value));
}

template <typename T>
ConfigValue value_of(const T& field) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>)
    return field;
  else
    return static_cast<int64_t>(field);
}

// A row's set and get for a plain field of DaemonConfig.
#define KJIT_CONFIG_FIELD(member)                                              \
  .set = [](DaemonConfig& c, const ConfigValue& v) { assign(c.member, v); }, \
  .get = [](const DaemonConfig& c) { return value_of(c.member); }

std::string quoted_choices(const std::vector<std::string_view>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) out += i + 1 == choices.size() ? " or " : ", ";
    out += "\"" + std::string(choices[i]) + "\"";
  }
  return out;
}

}  // namespace

std::string config_value_text(const ConfigKey& key, const DaemonConfig& config) {
  const ConfigValue value = key.get(config);
  if (const bool* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const int64_t* number = std::get_if<int64_t>(&value)) return std::to_string(*number);
  return std::get<std::string>(value);
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> k_keys = {
      {.path = "socket", .flag = "--socket", .kind = ConfigKind::text,
       .help = "unix socket to listen on (default: $XDG_RUNTIME_DIR/kjit/kjitd.sock)", KJIT_CONFIG_FIELD(socket_path)},
      {.path = "socket_group", .flag = "--socket-group", .kind = ConfigKind::text,
       .help = "group that may connect to the socket (mode 0660) besides the daemon's user",
       KJIT_CONFIG_FIELD(socket_group)},
      {.path = "listen", .flag = "--listen", .kind = ConfigKind::text,
       .help = "also listen on TCP HOST:PORT, with TLS (--tls-cert/--tls-key) or, with --insecure-listen, in plaintext",
       KJIT_CONFIG_FIELD(listen_address)},
      // Its flag also takes an address (plaintext there): read by the command line.
      {.path = "insecure_listen", .kind = ConfigKind::boolean, .help = "listen without TLS",
       KJIT_CONFIG_FIELD(insecure_listen)},
      {.path = "tls.cert", .flag = "--tls-cert", .kind = ConfigKind::text,
       .help = "PEM certificate (chain) of the TCP listener", .reloadable = true, KJIT_CONFIG_FIELD(tls.cert_file)},
      {.path = "tls.key", .flag = "--tls-key", .kind = ConfigKind::text, .help = "PEM private key of --tls-cert",
       .reloadable = true, KJIT_CONFIG_FIELD(tls.key_file)},
      {.path = "tls.client_ca", .flag = "--tls-client-ca", .kind = ConfigKind::text,
       .help = "PEM CA: TCP clients must present a certificate it signed (mutual TLS)", .reloadable = true,
       KJIT_CONFIG_FIELD(tls.client_ca_file)},
      {.path = "tenants", .flag = "--tenants", .kind = ConfigKind::text,
       .help = "TOML file of tenants and their token digests", .reloadable = true, KJIT_CONFIG_FIELD(tenants_file)},
      {.path = "socket_requires_token", .flag = "--socket-requires-token", .kind = ConfigKind::boolean,
       .help = "with --tenants: requests on the unix socket need a token too",
       KJIT_CONFIG_FIELD(socket_requires_token)},
      {.path = "admin_group", .flag = "--admin-group", .kind = ConfigKind::text,
       .help = "group whose members are operators on the socket (remove, whole-tier gc, verify) besides root and "
               "the daemon's user",
       KJIT_CONFIG_FIELD(admin_group)},
      {.path = "admission.max_pending_compiles", .flag = "--max-pending-compiles", .kind = ConfigKind::integer,
       .help = "compiles waiting or running at once, all tenants together (default 256)", .min = 1, .max = k_uint32,
       KJIT_CONFIG_FIELD(admission.max_pending_compiles)},
      {.path = "admission.max_pending_per_tenant", .flag = "--max-pending-per-tenant", .kind = ConfigKind::integer,
       .help = "compiles waiting or running at once for one tenant (default 64)", .min = 1, .max = k_uint32,
       KJIT_CONFIG_FIELD(admission.max_pending_per_tenant)},
      {.path = "admission.retry_after_ms", .kind = ConfigKind::integer,
       .help = "the retry hint given with a refusal, in milliseconds", .min = 1, .max = k_uint32,
       KJIT_CONFIG_FIELD(admission.retry_after_ms)},
      {.path = "metrics_port", .flag = "--metrics-port", .kind = ConfigKind::integer,
       .help = "serve Prometheus metrics on this port (0: none)", .min = 0, .max = 65535,
       KJIT_CONFIG_FIELD(metrics_port)},
      {.path = "metrics_address", .flag = "--metrics-address", .kind = ConfigKind::text,
       .help = "address of the metrics port (default 127.0.0.1)", KJIT_CONFIG_FIELD(metrics_address)},
      // A digest, like the tenants' tokens: the configuration never holds the token.
      {.path = "metrics_token_sha256", .flag = "--metrics-token-sha256", .kind = ConfigKind::text,
       .help = "the metrics port asks for authorization: Bearer <token>; the token's SHA-256 in hex (sha256sum)",
       .reloadable = true, KJIT_CONFIG_FIELD(metrics_token_sha256)},
      {.path = "metrics_tls", .flag = "--metrics-tls", .kind = ConfigKind::boolean,
       .help = "serve the metrics port over TLS with the TCP listener's certificate and key",
       KJIT_CONFIG_FIELD(metrics_tls)},
      {.path = "log_file", .flag = "--log-file", .kind = ConfigKind::text,
       .help = "log to this file instead of stderr (a reload reopens it)", KJIT_CONFIG_FIELD(log_file)},
      {.path = "drain_timeout_s", .flag = "--drain-timeout", .kind = ConfigKind::integer,
       .help = "on SIGTERM, how many seconds requests in flight get (default 30)", .min = 1, .max = 3600,
       .reloadable = true, KJIT_CONFIG_FIELD(drain_timeout_s)},
      {.path = "default_target", .flag = "--default-target", .kind = ConfigKind::text,
       .help = "target for requests that name none", KJIT_CONFIG_FIELD(default_target)},
      {.path = "cuda_home", .flag = "--cuda-home", .kind = ConfigKind::text,
       .help = "CUDA toolkit directory (default: $CUDA_HOME or the build's)", KJIT_CONFIG_FIELD(cuda_home)},
      {.path = "toolkit_policy", .kind = ConfigKind::text, .help = "which toolkit builds each target",
       .choices = {"system-first", "newest"},
       .set = [](DaemonConfig& c, const ConfigValue& v) {
         c.toolkit_policy = parse_toolkit_policy(std::get<std::string>(v)).value_or(ToolkitPolicy::system_first);
       },
       .get = [](const DaemonConfig& c) { return ConfigValue(std::string(to_string(c.toolkit_policy))); }},
      // Unset means the build's own prefix; "" means none, so the row keeps both.
      {.path = "local_toolkit_prefix", .kind = ConfigKind::text,
       .help = "the project's prefix of NVIDIA's wheels; \"\": none",
       .set = [](DaemonConfig& c, const ConfigValue& v) { c.local_toolkit_prefix = std::get<std::string>(v); },
       .get = [](const DaemonConfig& c) { return ConfigValue(c.local_toolkit_prefix.value_or("")); }},
      {.path = "tileiras", .flag = "--tileiras", .kind = ConfigKind::text,
       .help = "tileiras for Tile IR input (default: nvidia/cuNN/bin/tileiras in toolkit_paths, then the project's)",
       KJIT_CONFIG_FIELD(tileiras)},
      {.path = "log_level", .flag = "--log-level", .kind = ConfigKind::text,
       .help = "trace, debug, info, warn, error, critical or off",
       .choices = {"trace", "debug", "info", "warn", "warning", "error", "err", "critical", "off"},
       .reloadable = true, KJIT_CONFIG_FIELD(log_level)},
      {.path = "compile_workers", .flag = "--compile-workers", .kind = ConfigKind::integer,
       .help = "compile in at most N worker processes (default: one per core; 0: inside the daemon)", .min = 0,
       .max = 1024, KJIT_CONFIG_FIELD(compile_workers)},
      {.path = "sandbox", .flag = "--sandbox", .kind = ConfigKind::text,
       .help = "confine compile workers: landlock (default) or off", .choices = {"landlock", "off"},
       KJIT_CONFIG_FIELD(sandbox)},
      {.path = "pch", .flag = "--no-pch", .kind = ConfigKind::boolean,
       .help = "no precompiled headers: every CUDA C++ compile of a worker parses its includes anew",
       .flag_sets = false, KJIT_CONFIG_FIELD(pch)},
      {.path = "triton.prestart", .flag = "--no-triton-prestart", .kind = ConfigKind::boolean,
       .help = "find the Triton builds and start a Triton worker at the first Triton request, not while kjitd starts",
       .flag_sets = false, KJIT_CONFIG_FIELD(triton_prestart)},
      {.path = "triton.descriptions_dir", .flag = "--triton-descriptions-dir", .kind = ConfigKind::text,
       .help = "keep the Triton builds' descriptions here across starts, each used while its build is unchanged "
               "(default: triton-builds/ in the disk cache's directory)",
       KJIT_CONFIG_FIELD(triton_descriptions_dir)},
      {.path = "pch_bytes", .flag = "--pch-bytes", .kind = ConfigKind::integer,
       .help = "precompiled header files one worker keeps, in bytes (default 1 GiB; 0: no bound)", .min = 0,
       .max = k_int64, KJIT_CONFIG_FIELD(pch_bytes)},
      {.path = "limits.max_input_bytes", .flag = "--max-input-bytes", .kind = ConfigKind::integer,
       .help = "largest accepted input (default 16 MiB)", .min = 1, .max = k_int64, KJIT_CONFIG_FIELD(max_input_bytes)},
      {.path = "limits.max_header_bytes", .kind = ConfigKind::integer,
       .help = "all headers of one request, together, in bytes", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(max_header_bytes)},
      {.path = "limits.max_headers", .kind = ConfigKind::integer, .help = "headers in one request", .min = 1,
       .max = k_uint32, KJIT_CONFIG_FIELD(max_headers)},
      {.path = "limits.max_options", .kind = ConfigKind::integer, .help = "options in one request", .min = 1,
       .max = k_uint32, KJIT_CONFIG_FIELD(max_options)},
      {.path = "limits.max_name_expressions", .kind = ConfigKind::integer,
       .help = "name expressions in one request", .min = 1, .max = k_uint32, KJIT_CONFIG_FIELD(max_name_expressions)},
      {.path = "limits.max_launch_bytes", .kind = ConfigKind::integer,
       .help = "all buffers of one Launch request, in bytes", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(max_launch_bytes)},
      {.path = "limits.max_blob_bytes", .kind = ConfigKind::integer, .help = "one client blob, in bytes", .min = 1,
       .max = k_int64, KJIT_CONFIG_FIELD(max_blob_bytes)},
      // The wire carries a claim's wait as a uint32 of milliseconds.
      {.path = "limits.max_claim_wait_ms", .kind = ConfigKind::integer,
       .help = "the longest a ClaimBlobGroup call may wait for another caller's claim, in ms", .min = 0,
       .max = int64_t{UINT32_MAX}, KJIT_CONFIG_FIELD(max_claim_wait_ms)},
      {.path = "limits.max_claim_waiters_per_key", .kind = ConfigKind::integer,
       .help = "callers waiting for one blob group's claim at once", .min = 1, .max = int64_t{1} << 20,
       KJIT_CONFIG_FIELD(max_claim_waiters_per_key)},
      {.path = "limits.max_claim_waiters_per_namespace", .kind = ConfigKind::integer,
       .help = "callers of one cache namespace waiting for claims at once", .min = 1, .max = int64_t{1} << 20,
       KJIT_CONFIG_FIELD(max_claim_waiters_per_namespace)},
      {.path = "limits.max_claims_per_namespace", .kind = ConfigKind::integer,
       .help = "claims on blob groups one cache namespace holds at once", .min = 1, .max = int64_t{1} << 20,
       KJIT_CONFIG_FIELD(max_claims_per_namespace)},
      {.path = "limits.compile_timeout_s", .flag = "--compile-timeout", .kind = ConfigKind::integer,
       .help = "stop a compile after this many seconds (default 300)", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(compile_timeout_s)},
      {.path = "limits.compile_memory_bytes", .flag = "--compile-memory", .kind = ConfigKind::integer,
       .help = "address space one compile may add to its worker, in bytes (default 4 GiB)", .min = 1,
       .max = k_int64, KJIT_CONFIG_FIELD(compile_bounds.memory_bytes)},
      {.path = "limits.compile_cpu_seconds", .flag = "--compile-cpu-seconds", .kind = ConfigKind::integer,
       .help = "CPU time of one compile (default 300)", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(compile_bounds.cpu_seconds)},
      // Fewer than 16 descriptors leaves a worker unable to load its toolchains.
      {.path = "limits.compile_open_files", .flag = "--compile-open-files", .kind = ConfigKind::integer,
       .help = "file descriptors of one worker (default 512)", .min = 16, .max = int64_t{1} << 20,
       KJIT_CONFIG_FIELD(compile_bounds.open_files)},
      {.path = "limits.compile_output_bytes", .flag = "--compile-output-bytes", .kind = ConfigKind::integer,
       .help = "largest artifact or file a compile may write (default 256 MiB)", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(compile_bounds.output_bytes)},
      {.path = "cache.enabled", .flag = "--no-cache", .kind = ConfigKind::boolean,
       .help = "no cache at all: every request compiles", .flag_sets = false, KJIT_CONFIG_FIELD(cache.enabled)},
      {.path = "cache.memory_bytes", .flag = "--memory-cache-bytes", .kind = ConfigKind::integer,
       .help = "memory tier size in bytes (0: none)", .min = 0, .max = k_int64, KJIT_CONFIG_FIELD(cache.memory_bytes)},
      {.path = "cache.disk", .flag = "--no-disk-cache", .kind = ConfigKind::boolean, .help = "no disk tier",
       .flag_sets = false, KJIT_CONFIG_FIELD(cache.disk)},
      {.path = "cache.directory", .flag = "--cache-dir", .kind = ConfigKind::text,
       .help = "disk cache directory (default: $XDG_CACHE_HOME/kjit or ~/.cache/kjit)",
       KJIT_CONFIG_FIELD(cache.directory)},
      {.path = "cache.disk_bytes", .flag = "--disk-cache-bytes", .kind = ConfigKind::integer,
       .help = "disk tier bound in bytes (default 10 GiB)", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(cache.disk_bytes)},
      {.path = "cache.redis", .flag = "--redis", .kind = ConfigKind::text,
       .help = "Redis tier HOST:PORT (or a unix socket path), shared by a fleet", KJIT_CONFIG_FIELD(cache.redis)},
      {.path = "cache.redis_ttl_seconds", .kind = ConfigKind::integer, .help = "how long Redis keeps an entry",
       .min = 1, .max = k_int64, KJIT_CONFIG_FIELD(cache.redis_ttl_seconds)},
      {.path = "cache.reapi.endpoint", .flag = "--reapi", .kind = ConfigKind::text,
       .help = "REAPI tier: a Remote Execution API cache server (grpc://HOST:PORT, grpcs://HOST:PORT or "
               "unix:PATH), shared by a fleet and durable",
       KJIT_CONFIG_FIELD(cache.reapi.endpoint)},
      {.path = "cache.reapi.instance", .flag = "--reapi-instance", .kind = ConfigKind::text,
       .help = "the REAPI instance name (default: the server's default instance)",
       KJIT_CONFIG_FIELD(cache.reapi.instance)},
      {.path = "cache.reapi.tls_ca", .flag = "--reapi-tls-ca", .kind = ConfigKind::text,
       .help = "PEM roots for a grpcs:// REAPI endpoint (default: the system's)", KJIT_CONFIG_FIELD(cache.reapi.tls_ca)},
      {.path = "cache.reapi.token_file", .flag = "--reapi-token-file", .kind = ConfigKind::text,
       .help = "a file holding a bearer token for the REAPI server, read again when it changes",
       KJIT_CONFIG_FIELD(cache.reapi.token_file)},
      {.path = "cache.reapi.timeout_ms", .kind = ConfigKind::integer, .help = "deadline of each REAPI call",
       .min = 1, .max = k_uint32, KJIT_CONFIG_FIELD(cache.reapi.timeout_ms)},
      {.path = "cache.reapi.namespaces", .kind = ConfigKind::text,
       .help = "where a tenant's namespace goes: into the Action digest (action) or the instance name, as "
               "<instance>/<namespace> (instance)",
       .choices = {"action", "instance"}, KJIT_CONFIG_FIELD(cache.reapi.namespaces)},
      {.path = "cache.reapi.write_queue_bytes", .kind = ConfigKind::integer,
       .help = "bytes of entries waiting to be written to the REAPI server behind answers (past it a write is "
               "dropped and counted)",
       .min = 1, .max = k_int64, KJIT_CONFIG_FIELD(cache.reapi.write_queue_bytes)},
      {.path = "cache.lease_wait_ms", .kind = ConfigKind::integer,
       .help = "how long to wait for another daemon's compile of the same key", .min = 0, .max = k_int64,
       KJIT_CONFIG_FIELD(cache.lease_wait_ms)},
      {.path = "cache.direct_reads", .flag = "--no-direct-reads", .kind = ConfigKind::boolean,
       .help = "publish no direct-read manifest: local clients always ask over the socket", .flag_sets = false,
       KJIT_CONFIG_FIELD(cache.direct_reads)},
      {.path = "cache.max_recipes", .kind = ConfigKind::integer,
       .help = "recipes (requests without their target) kept per namespace (0: none)", .min = 0, .max = k_int64,
       KJIT_CONFIG_FIELD(cache.max_recipes)},
      {.path = "cache.max_recipe_bytes", .kind = ConfigKind::integer,
       .help = "bytes of recipes kept per namespace", .min = 1, .max = k_int64,
       KJIT_CONFIG_FIELD(cache.max_recipe_bytes)},
      {.path = "after_warmup", .flag = "--after-warmup", .kind = ConfigKind::text,
       .help = "start sealed: a miss is counted, also warned of, or refused (off: start unsealed); a reload that "
               "changes it seals, or unseals, every namespace",
       .choices = {"off", "count", "warn", "refuse"}, .reloadable = true, KJIT_CONFIG_FIELD(after_warmup)},
  };
  return k_keys;
}

#undef KJIT_CONFIG_FIELD

const ConfigKey* find_config_key(std::string_view path) {
  const std::vector<ConfigKey>& keys = config_keys();
  auto found = std::find_if(keys.begin(), keys.end(), [&](const ConfigKey& key) { return key.path == path; });
  return found == keys.end() ? nullptr : &*found;
}

std::string config_value_rule(const ConfigKey& key) {
  switch (key.kind) {
    case ConfigKind::text: return "a string";
    case ConfigKind::boolean: return "true or false";
    case ConfigKind::integer: return "an integer from " + std::to_string(key.min) + " to " + std::to_string(key.max);
  }
  return "a value";
}

Status check_config_value(const ConfigKey& key, const ConfigValue& value, std::string_view where) {
  const std::string name(where);
  const bool right_kind = (key.kind == ConfigKind::text && std::holds_alternative<std::string>(value)) ||
                          (key.kind == ConfigKind::boolean && std::holds_alternative<bool>(value)) ||
                          (key.kind == ConfigKind::integer && std::holds_alternative<int64_t>(value));
  if (!right_kind || (key.kind == ConfigKind::integer &&
                      (std::get<int64_t>(value) < key.min || std::get<int64_t>(value) > key.max)))
    return make_error(ErrorCode::invalid_argument, name + " must be " + config_value_rule(key));
  if (key.kind == ConfigKind::text && !key.choices.empty()) {
    const std::string& text = std::get<std::string>(value);
    if (std::find(key.choices.begin(), key.choices.end(), text) == key.choices.end())
      return make_error(ErrorCode::invalid_argument,
                        name + " must be " + quoted_choices(key.choices) + ", not \"" + text + "\"");
  }
  return Ok{};
}

Result<ConfigValue> parse_config_flag(const ConfigKey& key, const std::string& text) {
  if (key.kind != ConfigKind::integer) return ConfigValue(text);
  int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc{} || end != text.data() + text.size() || text.empty())
    return make_error(ErrorCode::invalid_argument,
                      std::string(key.flag) + " must be " + config_value_rule(key) + ", not \"" + text + "\"");
  return ConfigValue(number);
}

Status set_config_value(DaemonConfig& config, const ConfigKey& key, const ConfigValue& value, std::string_view where) {
  if (Status s = check_config_value(key, value, where); !s) return s;
  key.set(config, value);
  return Ok{};
}

uint64_t largest_request_bytes(const DaemonConfig& config) {
  // Fields besides the big ones (names, options, targets): well under this.
  constexpr uint64_t k_room = 1u << 20;
  const uint64_t compile = config.max_input_bytes + config.max_header_bytes;
  return std::max({compile, config.max_blob_bytes, config.max_launch_bytes}) + k_room;
}

}  // namespace kjit
