#include "server/daemon/daemon.h"

#include <spdlog/spdlog.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "cache/reapi_store.h"
#include "server/rpc/cache_service.h"
#include "server/rpc/recipe_service.h"
#include "server/workers/compile_workers.h"
#include "server/rpc/compiler_service.h"
#include "server/compile/cached_compiler.h"
#include "server/compile/daemon_cache.h"
#include "server/compile/warmup_seal.h"
#include "server/rpc/diagnostics_service.h"
#include "server/rpc/elastic_thread_pool.h"
#include "launch/cuda_driver.h"
#include "server/rpc/launch_service.h"
#include "server/access/listener_credentials.h"
#include "server/rpc/call_gate.h"
#include "server/compile/compile_admission.h"
#include "server/observe/metrics.h"
#include "server/access/tenants.h"
#include "server/config/config_keys.h"
#include "server/config/pipeline_setup.h"
#include "backends/triton/triton_compile.h"
#include "backends/triton/triton_discovery.h"
#include "server/workers/worker_confinement.h"
#include "kjit/socket_path.h"
#include "server/daemon/direct_read_manifest.h"
#include "server/daemon/leftover_directories.h"
#include "server/daemon/socket_acceptor.h"
#include "server/daemon/socket_identity.h"
#include "server/daemon/systemd_notify.h"
#include "server/access/local_users.h"
#include "server/access/peer_credentials.h"
#include "server/access/served_certificates.h"
#include "server/observe/request_log.h"

namespace kjit {
namespace {

// True when something accepts connections on the unix socket at `path`.
bool socket_is_live(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return live;
}

// The group named by socket_group, resolved before anything is created.
Result<gid_t> socket_group_id(const std::string& name) {
  std::vector<char> buffer(16384);
  group entry{};
  group* found = nullptr;
  if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found)
    return make_error(ErrorCode::failed_precondition, "socket_group: no group named '" + name + "' on this host");
  return found->gr_gid;
}

// The socket's directory when the daemon creates it: owner only, or also the
// socket's group, which must reach the socket to use it.
Status prepare_socket_path(const std::string& path, std::optional<gid_t> group_id) {
  namespace fs = std::filesystem;
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return make_error(ErrorCode::invalid_argument, "socket path is too long for a unix socket: " + path);
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return make_error(ErrorCode::failed_precondition, "cannot create " + dir.string() + ": " + ec.message());
    ::chmod(dir.c_str(), group_id ? 0750 : 0700);  // the socket is the daemon's door
    if (group_id && ::chown(dir.c_str(), static_cast<uid_t>(-1), *group_id) != 0)
      return make_error(ErrorCode::failed_precondition, "cannot give " + dir.string() + " to group " +
                                                            std::to_string(*group_id) + ": " + std::strerror(errno));
  }
  if (fs::exists(fs::symlink_status(path, ec))) {
    if (!fs::is_socket(fs::symlink_status(path, ec)))
      return make_error(ErrorCode::failed_precondition, path + " exists and is not a socket; refusing to replace it");
    if (socket_is_live(path))
      return make_error(ErrorCode::failed_precondition, "another kjitd is already serving " + path);
    fs::remove(path, ec);  // stale socket left by a daemon that died
  }
  return Ok{};
}

// Where the socket is bound: a name of this process's beside `path`, renamed
// onto `path` once its mode and group are set, so a client never finds a
// socket it may not yet use. `path` itself where that name would be too
// long for a unix socket.
std::string binding_path(const std::string& path) {
  const std::string temp =
      std::filesystem::path(path).parent_path().string() + "/.kjitd-bind-" + std::to_string(::getpid());
  return temp.size() < sizeof(sockaddr_un::sun_path) ? temp : path;
}

// NVRTC also looks for quoted includes in the working directory: the daemon
// runs in an empty one (it compiles there when compile_workers = 0), so no
// request can reach a file that happens to be there. Workers run in their
// private directories instead.
void enter_empty_directory(const DaemonConfig& config) {
  const std::string socket = config.socket_path.empty() ? default_socket_path() : config.socket_path;
  std::filesystem::path empty_dir = std::filesystem::path(socket).parent_path() / ".kjitd-empty";
  std::error_code ec;
  std::filesystem::create_directories(empty_dir, ec);
  if (ec || ::chdir(empty_dir.c_str()) != 0) spdlog::warn("cannot chdir to {}", empty_dir.string());
}

// Directories that kjit processes which are gone left in the temporary root
// (a daemon killed, its workers with it): removed before this daemon makes
// its own there, those of live processes kept (leftover_directories.h).
void remove_leftovers_in_temporary_root() {
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::temp_directory_path(ec);
  if (ec) return;
  const LeftoverScan scan = remove_leftover_directories(root);
  if (!scan.removed.empty())
    spdlog::info("removed {} director{} in {} left by kjit processes that are gone", scan.removed.size(),
                 scan.removed.size() == 1 ? "y" : "ies", root.string());
  for (const std::string& failure : scan.failed) spdlog::warn("cannot remove a leftover directory: {}", failure);
}

// A directory of this daemon's in the temporary root, named so that a later
// daemon can tell when this one is gone (leftover_directories.h).
std::string own_temporary_directory(const std::string& kind) {
  const std::optional<std::string> tag = owner_tag_of_this_process();
  return (std::filesystem::temp_directory_path() / (kind + (tag ? *tag : std::to_string(::getpid())))).string();
}

}  // namespace

Daemon::Daemon(DaemonConfig config, WorkerLaunch workers)
    : config_(std::move(config)), worker_launch_(std::move(workers)) {}
Daemon::~Daemon() {
  shutdown();
  // A scrape may come while the members go: the sources point into them.
  if (metrics_) metrics_->set_sources({});
}

Status Daemon::start() {
  // Absolute: the daemon changes its working directory once it serves, and
  // still removes the socket (and the manifest beside it) when it stops.
  socket_path_ = std::filesystem::absolute(config_.socket_path.empty() ? default_socket_path() : config_.socket_path)
                     .lexically_normal()
                     .string();
  start_directory_ = std::filesystem::current_path().string();
  std::optional<gid_t> group_id;
  if (!config_.socket_group.empty()) {
    Result<gid_t> id = socket_group_id(config_.socket_group);
    if (!id) return id.error();
    group_id = *id;
  }
  if (Status s = prepare_socket_path(socket_path_, group_id); !s) return s;
  // A manifest left by a daemon that died describes a socket no longer served.
  remove_direct_read_manifest(socket_path_);
  remove_leftovers_in_temporary_root();

  if (config_.compile_workers > 0 && !worker_launch_.command.empty()) {
    Result<std::string> confinement = check_worker_confinement(config_);
    if (!confinement) return confinement.error();
    confinement_ = std::move(confinement.value());
    WorkerLaunch launch = worker_launch_;
    launch.toolkits_from_daemon = true;  // handed below, once discovered
    workers_ = std::make_shared<CompileWorkers>(CompileWorkers::Options{
        std::move(launch), config_.compile_workers, std::chrono::seconds(config_.compile_timeout_s), config_.compile_bounds});
    spdlog::info("compiles run in up to {} worker process(es), {} s each at most; {}", config_.compile_workers,
                 config_.compile_timeout_s, confinement_);
    // Workers start first, before the daemon's own toolkit discovery and
    // listeners: starting one (loading the binary and its toolchains,
    // confining itself) takes longer than the rest of the daemon's start,
    // so a compile sent the moment the daemon serves finds one ready, or
    // nearly. Hits never wait for them.
    workers_->keep_ready();
  } else {
    confinement_ = "none: compiles run inside the daemon's process (compile_workers = 0), unconfined";
    spdlog::warn("{}", confinement_);
  }
  // Triton builds take a second or more of CPU each to answer: asked at the
  // first Triton request (or toolkit listing), which waits for them, or
  // ahead of it by the Triton worker's prestart, in the background.
  if (config_.triton_plugin_settings.empty()) {
    discover_triton_builds_on_first_use(triton_build_search_of(config_), own_temporary_directory("kjitd-triton-"),
                                        triton_descriptions_dir_of(config_));
  } else {
    // Plugins configured for named builds are checked before anything is
    // served: one that a build cannot load refuses the start, rather than
    // failing the compiles sent to that build.
    Result<TritonDiscovery> found = discover_configured_triton_builds(
        triton_build_search_of(config_), config_.triton_plugin_settings, own_temporary_directory("kjitd-triton-"),
        triton_descriptions_dir_of(config_));
    if (!found) return found.error();
    set_triton_builds(std::move(found->builds));
  }
  // Compiling in this process, its Triton interpreters live here too, under
  // a name of this daemon's rather than a pid's alone.
  if (!workers_) set_triton_home(own_temporary_directory("kjitd-triton-home-"));
  auto pipeline = make_compile_pipeline(config_);
  if (!pipeline) return pipeline.error();
  // Toolkit discovery happens here once; workers load what it found.
  if (workers_) workers_->hand_toolkits(discovered_homes(**pipeline));
  for (const LoadedPlugin& plugin : (*pipeline)->plugins())
    spdlog::info("plugin {} {} from {}: {} pass(es), {} edit(s)", plugin.name, plugin.version, plugin.path,
                 plugin.passes.size(), plugin.edits.size());
  std::shared_ptr<const TenantRegistry> tenants;
  if (!config_.tenants_file.empty()) {
    Result<TenantRegistry> loaded = TenantRegistry::load_file(config_.tenants_file);
    if (!loaded) return loaded.error();
    tenants = std::make_shared<const TenantRegistry>(std::move(loaded.value()));
    spdlog::info("{} tenant(s) from {}; tokens required on TCP{}", tenants->tenants().size(), config_.tenants_file,
                 config_.socket_requires_token ? " and on the socket" : "");
  }
  // Served once the TCP listener's certificate is (metrics_tls serves it too).
  if (config_.metrics_port != 0) metrics_ = std::make_shared<Metrics>();
  admission_ = std::make_shared<CompileAdmission>(CompileAdmission::Options{
      config_.admission.max_pending_compiles, config_.admission.max_pending_per_tenant,
      // Compiles in the daemon's process still get bounded concurrency.
      config_.compile_workers > 0 ? config_.compile_workers : 2,
      std::chrono::milliseconds(config_.admission.retry_after_ms)});
  // Who is on the socket: the kernel says (socket_acceptor.h), this decides
  // who of them is an operator and where each one's blobs live.
  Result<std::shared_ptr<const LocalUserPolicy>> local_users = LocalUserPolicy::make(
      {.daemon_uid = static_cast<uint32_t>(::geteuid()), .admin_group = config_.admin_group,
       .blob_sharing = config_.blob_sharing});
  if (!local_users) return local_users.error();
  auto peers = std::make_shared<PeerRegistry>();
  gate_ = std::make_shared<CallGate>(
      CallGate::Options{tenants, config_.socket_requires_token, metrics_, peers, *local_users});
  auto cache = open_daemon_cache(config_.cache);
  cache_ = cache;
  if (cache && tenants) cache->set_quotas(tenants->quotas());
  auto compiler = std::make_shared<const CachedCompiler>(config_, std::move(pipeline.value()), cache, workers_, admission_);
  compiler_ = compiler;
  blocking_work_ = std::make_shared<ElasticThreadPool>(ElasticThreadPool::Options{});
  compiler_service_ = std::make_unique<CompilerService>(compiler, blocking_work_, gate_);
  // The driver is looked for, never required: without it Launch answers
  // FAILED_PRECONDITION and everything else works.
  auto driver = std::make_shared<CudaDriver>(config_.device);
  if (Status s = driver->available(); !s) spdlog::info("launching disabled: {}", s.error().message);
  launch_service_ = std::make_unique<LaunchService>(compiler, driver, gate_);
  cache_service_ = std::make_unique<CacheService>(compiler, gate_);
  recipe_service_ = std::make_unique<RecipeService>(compiler, gate_);
  DiagnosticsService::Facts facts{config_, confinement_};
  if (cache) {
    for (const TierStats& tier : cache->stats().tiers) facts.cache_tiers.emplace_back(to_string(tier.tier));
    facts.cache_sharing =
        cache->shares_leases()
            ? "one compile per key, claims and recipes are shared with every daemon on the same Redis (leases)"
            : std::string("no Redis: one compile per key and claims are per daemon (daemons may compile the same "
                          "key at once)") +
                  (cache->reapi() ? "; entries and recipes are shared through the REAPI store" : "");
  }
  diagnostics_service_ = std::make_unique<DiagnosticsService>(std::move(facts),
                                                              workers_, gate_, [this] { return reload(); });
  if (compiler->fleet()) diagnostics_service_->set_fleet([compiler] { return compiler->fleet()->stats(); });
  if (metrics_) {
    MetricsSources sources;
    if (cache) {
      sources.cache = [cache] { return cache->stats(); };
      sources.coalescer = [cache] { return cache->coalescer_stats(); };
      sources.namespaces = [cache] { return cache->namespace_stats(); };
      if (ReapiStore* reapi = cache->reapi()) sources.reapi = [cache, reapi] { return reapi->transfer_stats(); };
    }
    if (const BlobStore* blobs = cache_service_->blobs()) sources.blobs = [blobs] { return blobs->stats(); };
    if (workers_) sources.workers = [workers = workers_] { return workers->counters(); };
    sources.admission = [admission = admission_] { return admission->snapshot(); };
    sources.draining = [gate = gate_] { return gate->draining(); };
    sources.after_warmup = [compiler] { return compiler->seal().misses_by_tenant(); };
    if (compiler->fleet()) sources.fleet = [compiler] { return compiler->fleet()->stats(); };
    metrics_->set_sources(std::move(sources));
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // The socket is kjitd's own, not a gRPC listening port: gRPC would not
  // tell a handler who connected.
  const std::string bound_path = binding_path(socket_path_);
  Result<int> listen_fd = listen_on_unix_socket(bound_path);
  if (!listen_fd) return listen_fd.error();
  acceptor_ = std::make_unique<SocketAcceptor>(*listen_fd, peers, *local_users);
  int tcp_port = 0;
  // The TLS files' private copies, beside the socket as its manifest is.
  if (Status s = add_tcp_listener(builder, config_, socket_path_ + ".tls", &tcp_port, &served_certificates_); !s)
    return s;
  if (metrics_) {
    MetricsAccess access;
    access.token_sha256 = config_.metrics_token_sha256;
    if (config_.metrics_tls && served_certificates_)
      access.tls = [served = served_certificates_] {
        const std::shared_ptr<const TlsMaterial> material = served->material();
        return std::make_shared<const MetricsCertificate>(MetricsCertificate{material->cert, material->key});
      };
    if (Status s = metrics_->serve(config_.metrics_address, config_.metrics_port, std::move(access)); !s) return s;
    spdlog::info("metrics on {}://{}:{}/metrics{}", config_.metrics_tls ? "https" : "http", config_.metrics_address,
                 metrics_->port(), config_.metrics_token_sha256.empty() ? "" : " (bearer token required)");
  }
  // Room for the largest request any configured limit admits, so kjit's own
  // checks answer, naming the limit; anything bigger is refused by gRPC
  // itself with RESOURCE_EXHAUSTED before it is read.
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<uint64_t>(largest_request_bytes(config_), INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  // A claim on a blob group is held while its call stays open, and a holder
  // whose host vanishes never closes its connection. So the daemon pings a
  // connection with calls open every 10 s, also while a call sends nothing
  // (a claim's stream), and drops it when a ping goes 5 s unanswered: its
  // calls are cancelled, its claims given up (within 16 s of the last sign
  // of life). Clients may ping as often as every 10 s (kjit's: every 20 s).
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Without the first, gRPC 1.51 spaces pings on a quiet connection 5 min
  // apart; without the second, newer gRPCs wait 60 s for a ping's answer.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument("grpc.http2.ping_timeout_ms", 5'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.RegisterService(compiler_service_.get());
  builder.RegisterService(launch_service_.get());
  builder.RegisterService(cache_service_.get());
  builder.RegisterService(recipe_service_.get());
  builder.RegisterService(diagnostics_service_.get());

  server_ = builder.BuildAndStart();
  if (!server_) {
    acceptor_.reset();
    ::unlink(bound_path.c_str());
    return make_error(ErrorCode::failed_precondition,
                      "cannot serve" + (config_.listen_address.empty() ? "" : " on " + config_.listen_address));
  }
  // Once everything that refuses a start (the pipeline and its plugins,
  // tenants, TLS files, listeners) has passed: a refused start ends at once,
  // instead of waiting for the discovery of the Triton builds this begins.
  if (workers_ && config_.triton_prestart) workers_->prestart_triton(config_.triton_prestart_builds);
  // Health says SERVING only once the start is over (below): whoever polls
  // it, a test, a container's probe, `kjit health`, then finds the socket's
  // mode and group set and the direct-read manifest published.
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health) health->SetServingStatus(false);
  // Owner and group may connect; the group is the daemon's own unless
  // socket_group names another (the users allowed to compile).
  ::chmod(bound_path.c_str(), 0660);
  if (group_id && ::chown(bound_path.c_str(), static_cast<uid_t>(-1), *group_id) != 0) {
    const int saved = errno;
    ::unlink(bound_path.c_str());  // bound by this start, which ends here
    return make_error(ErrorCode::failed_precondition,
                      "cannot give the socket to group " + config_.socket_group + ": " + std::strerror(saved));
  }
  // Connections wait in the socket's backlog until the acceptor runs.
  if (Status s = acceptor_->start(server_.get()); !s) {
    ::unlink(bound_path.c_str());
    return s;
  }
  if (bound_path != socket_path_ && ::rename(bound_path.c_str(), socket_path_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(bound_path.c_str());
    return make_error(ErrorCode::failed_precondition,
                      "cannot move the socket to " + socket_path_ + ": " + std::strerror(saved));
  }
  // Taken once the socket is in place (the move changes its change time):
  // the stop removes this socket, not one bound at the path later.
  bound_socket_ = socket_identity_of(socket_path_);
  publish_direct_reads(cache.get());
  // NVRTC also looks for quoted includes in the working directory: make it
  // an empty one, so no request can reach a file the daemon happens to have.
  enter_empty_directory(config_);
  std::string tcp;
  if (!config_.listen_address.empty()) {
    // The port bound, which differs from the configured one for port 0.
    const size_t colon = config_.listen_address.rfind(':');
    tcp = " and " + config_.listen_address.substr(0, colon) + ":" + std::to_string(tcp_port) +
          (config_.tls.cert_file.empty() ? " (plaintext)" : config_.tls.client_ca_file.empty() ? " (TLS)" : " (mutual TLS)");
  }
  spdlog::info("kjitd listening on unix:{}{}", socket_path_, tcp);
  if (health) health->SetServingStatus(true);
  // Last: systemd (Type=notify) counts kjitd started only now, so a unit
  // ordered after it, or a check after `systemctl start`, finds it serving.
  systemd_notify::ready("serving on unix:" + socket_path_ + tcp + "; " +
                        (workers_ ? "compiles in up to " + std::to_string(config_.compile_workers) +
                                        " confined worker process(es), kept ready"
                                  : "compiles in the daemon's process"));
  return Ok{};
}

// Local clients may read the disk tier themselves only where what they read
// is what the socket would answer them: the operator its blobs of the
// default namespace, every other user those of its own namespace, whose
// file names it can make only with the key the socket gives it
// (direct_read_manifest.h).
void Daemon::publish_direct_reads(const DaemonCache* cache) {
  if (!config_.cache.direct_reads || !cache) return;
  const std::optional<DaemonCache::DiskLayout> disk = cache->disk_layout();
  if (!disk) return;
  if (config_.socket_requires_token) return;
  DirectReadManifest manifest;
  manifest.socket_path = socket_path_;
  manifest.disk_root = disk->root;
  manifest.ns = "";
  manifest.touch_interval_ms = disk->touch_interval.count();
  manifest.daemon_uid = ::geteuid();
  manifest.names_key_id = cache->names_secret_id();
  if (Status s = write_direct_read_manifest(manifest); !s)
    spdlog::warn("no direct reads: {}", s.error().message);
  else
    spdlog::info("direct reads of the disk tier published in {}", direct_read_manifest_path(socket_path_));
}

void Daemon::wait() {
  if (server_) server_->Wait();
}

uint16_t Daemon::metrics_port() const { return metrics_ ? metrics_->port() : 0; }

void Daemon::drain() {
  if (!server_ || !gate_) return;
  gate_->start_draining();
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService())
    health->SetServingStatus(false);
  const uint32_t drain_timeout_s = [&] {
    std::lock_guard lock(config_mutex_);  // a reload may have changed it
    return config_.drain_timeout_s;
  }();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(drain_timeout_s);
  const std::string draining = "draining: " + std::to_string(gate_->in_flight()) + " call(s) in flight, up to " +
                               std::to_string(drain_timeout_s) + " s";
  spdlog::info("{}", draining);
  systemd_notify::stopping(draining);
  if (gate_->wait_idle(deadline)) {
    spdlog::info("drained: no call in flight");
    systemd_notify::status("drained: no call in flight; stopping");
  } else {
    spdlog::warn("drain deadline passed with {} call(s) in flight; stopping them", gate_->in_flight());
    systemd_notify::status("drain deadline passed; stopping the calls still in flight");
  }
  // What is left are idle connections (which gRPC would otherwise wait out
  // for the whole grace) and calls the gate refuses at once.
  stop_serving(std::chrono::milliseconds(500));
}

void Daemon::shutdown() { stop_serving(std::chrono::seconds(5)); }

Result<ReloadReport> Daemon::reload() {
  std::lock_guard lock(reload_mutex_);
  Result<DaemonConfig> read = [&]() -> Result<DaemonConfig> {
    if (reread_) return reread_();
    std::lock_guard config_lock(config_mutex_);
    return config_;
  }();
  Result<ReloadReport> report = read ? reload_from(*read) : Result<ReloadReport>(read.error());
  if (metrics_) metrics_->record_reload(static_cast<bool>(report));
  if (!report) {
    spdlog::error("reload refused, the configuration in force stays: {}", report.error().message);
    return report;
  }
  auto joined = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
  };
  spdlog::info("configuration reloaded: {}{}", report->reloaded.empty() ? "nothing to reload" : joined(report->reloaded),
               report->needs_restart.empty() ? "" : "; waiting for a restart: " + joined(report->needs_restart));
  return report;
}

Result<ReloadReport> Daemon::reload_from(const DaemonConfig& read) {
  const DaemonConfig in_force = [&] {
    std::lock_guard lock(config_mutex_);
    return config_;
  }();
  ConfigChanges changes = config_changes(in_force, read);
  DaemonConfig next = with_reloadable_keys(in_force, read);
  // The listener asks for client certificates or not, and speaks TLS or
  // not, from its start: a change of either waits for a restart.
  const bool same_tls_shape = in_force.tls.cert_file.empty() == read.tls.cert_file.empty() &&
                              in_force.tls.client_ca_file.empty() == read.tls.client_ca_file.empty();
  if (!same_tls_shape) {
    next.tls = in_force.tls;
    std::erase_if(changes.reloadable, [&](const std::string& key) {
      if (!key.starts_with("tls.")) return false;
      changes.needs_restart.push_back(key);
      return true;
    });
  }

  // Everything that can fail, read before anything changes.
  auto from_start = [&](const std::string& path) {
    return path.empty() || path.front() == '/' ? path : start_directory_ + "/" + path;
  };
  std::shared_ptr<const TenantRegistry> tenants;
  if (!next.tenants_file.empty()) {
    Result<TenantRegistry> loaded = TenantRegistry::load_file(from_start(next.tenants_file));
    if (!loaded) return loaded.error();
    tenants = std::make_shared<const TenantRegistry>(std::move(loaded.value()));
  }
  std::optional<TlsMaterial> material;
  if (served_certificates_) {
    const TlsConfig files{from_start(next.tls.cert_file), from_start(next.tls.key_file),
                          from_start(next.tls.client_ca_file)};
    Result<TlsMaterial> checked = read_tls_material(files);
    if (!checked) return checked.error();
    material = std::move(checked.value());
  }

  // In force from here; only the certificates' copy can still fail.
  ReloadReport report;
  if (material) {
    if (Status s = served_certificates_->replace(*material); !s) return s.error();
    report.reloaded.emplace_back("tls");
  }
  gate_->set_tenants(tenants);
  if (cache_) cache_->set_quotas(tenants ? tenants->quotas() : std::map<std::string, uint64_t, std::less<>>{});
  if (tenants || !in_force.tenants_file.empty()) report.reloaded.emplace_back("tenants");
  if (!next.log_file.empty()) {
    reopen_log_file();  // after logrotate moved the file away
    report.reloaded.emplace_back("log_file");
  }
  spdlog::set_level(spdlog::level::from_str(next.log_level));
  if (metrics_) metrics_->set_token_digest(next.metrics_token_sha256);
  // Only a change: a reload that leaves after_warmup as it was keeps what
  // the operator sealed or unsealed since.
  if (next.after_warmup != in_force.after_warmup)
    compiler_->seal().reconfigure(parse_after_warmup(next.after_warmup).value_or(AfterWarmup::off));
  for (const std::string& key : changes.reloadable)
    if (key != "tenants") report.reloaded.push_back(key);
  report.needs_restart = std::move(changes.needs_restart);
  diagnostics_service_->set_config(next);
  std::lock_guard lock(config_mutex_);
  config_ = std::move(next);
  return report;
}

void Daemon::stop_serving(std::chrono::milliseconds grace) {
  if (!server_) return;
  std::call_once(shutdown_once_, [this, grace] {
    // Again after a drain, harmless; alone after a second signal.
    systemd_notify::stopping("stopping: calls in flight get " + std::to_string(grace.count()) + " ms");
    // Calls in flight get gRPC's grace period; a compile still running after
    // it has its worker killed, so the shutdown never waits a compile out.
    std::mutex mutex;
    std::condition_variable shut;
    bool done = false;
    std::thread stop_compiles([&] {
      std::unique_lock lock(mutex);
      if (!shut.wait_for(lock, grace, [&] { return done; }) && workers_) workers_->stop();
    });
    // No connection is handed over to a server shutting down.
    if (acceptor_) acceptor_->stop();
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    {
      std::lock_guard lock(mutex);
      done = true;
    }
    shut.notify_one();
    stop_compiles.join();
    // Only this daemon's socket, and its manifest: another daemon may have
    // bound the path since (this one taken for dead), and its socket and
    // manifest are its own. The manifest first: from here on, nothing
    // answers on the socket. With no socket left at the path, a manifest
    // there describes none.
    std::error_code ec;
    const bool ours = bound_socket_ && socket_still_at(socket_path_, *bound_socket_);
    if (ours || !std::filesystem::exists(std::filesystem::symlink_status(socket_path_, ec)))
      remove_direct_read_manifest(socket_path_);
    if (ours)
      remove_socket_if_still_at(socket_path_, *bound_socket_);
    else if (bound_socket_)
      spdlog::warn("{} is no longer the socket this daemon bound; left in place", socket_path_);
    spdlog::info("kjitd stopped");
  });
}

}  // namespace kjit
