// The kjit C++ client: talks to kjitd over its unix socket (or TCP). No gRPC
// types in this header, so callers do not compile against gRPC.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kjit/launch_config.h"
#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

struct CompileRequest {
  InputKind input_kind = InputKind::cuda_source;
  std::string input;                          // source or PTX text
  std::string input_name;                     // shown in diagnostics
  std::string target;                         // "cuda:90"; empty: the daemon's default
  std::vector<std::string> options;           // e.g. "-DN=4", "-lineinfo"
  std::map<std::string, std::string> headers; // include name -> content
  std::vector<std::string> name_expressions;  // e.g. "scale<float>"
  ArtifactKind artifact = ArtifactKind::cubin;
  std::string pipeline;                        // a named pipeline; empty: the default
  std::map<std::string, std::string> pass_args;  // "PASS.KEY" -> value
  bool allow_ptx_fallback = false;             // PTX instead of an error when no cubin can be built
  // Several targets instead of `target`: the answer is a fatbin with a cubin
  // for each and PTX for the newest, each part compiled and cached alone.
  std::vector<std::string> targets;
  // Triton input: Triton's options by their Triton names ("num_warps" ->
  // "8"), and the Triton build to use ("triton-3.9.0"; empty: the default).
  std::map<std::string, std::string> triton_options;
  std::string triton_build;
  // Triton input: edits to the build's stages, after the daemon's own.
  std::vector<TritonEdit> triton_edits;
  // Triton input: the build's plugins switched off for this kernel, as
  // `kjit toolkits` names them ("triton-utlx"; "*" for all).
  std::vector<std::string> triton_plugins_off;
};

// One part of a fatbin answer.
struct FatbinEntry {
  std::string target;
  ArtifactKind kind = ArtifactKind::cubin;  // cubin or ptx
  uint64_t size = 0;
  std::string cache;    // where the part came from: "memory", "disk", "redis" or "compiled"
  std::string key;      // the part's own cache key
  std::string toolkit;  // what built it (CUDA toolkit, HIPRTC or LLVM)
  std::vector<KernelInfo> kernels;
  std::vector<std::string> notes;
};

struct CompileResult {
  ArtifactKind artifact_kind = ArtifactKind::cubin;
  std::string artifact;
  std::string target;
  std::vector<StageTiming> timings;
  std::string log;
  std::vector<KernelInfo> kernels;
  std::map<std::string, std::string> lowered_names;
  double server_ms = 0;
  std::string key;                           // cache key, hex SHA-256
  std::vector<KeyComponent> key_components;  // what the key was derived from
  std::string pipeline;                      // the pipeline that ran
  std::vector<std::string> notes;
  std::string cache;  // "memory", "disk", "redis", "compiled" or "joined" (shared another request's compile)
  std::string toolkit;               // what built the artifact: "13.5 (local: /path)" (CUDA), "LLVM 19.1.7 + lld" (hip:)
  std::vector<FatbinEntry> entries;  // a fatbin's parts
  std::string request_id;            // the daemon's id for this request, as its log lines name it
  // Triton input: the kernel's metadata as Triton writes it (JSON text), and
  // the Triton build that compiled it.
  std::string triton_metadata;
  std::string triton_build;
  // And Triton's intermediate files by extension ("ttgir", "llir", "ptx", ...).
  std::map<std::string, std::string> triton_files;
};

// A CUDA toolkit the daemon found (`kjit toolkits`).
struct ToolkitDescription {
  std::string origin;  // "system", "wheel", "local" or "configured"
  std::string home;
  std::string version;
  std::string nvrtc, nvjitlink, nvfatbin;  // the library loaded, or why not
  std::vector<uint32_t> archs;
  std::vector<std::string> include_dirs;
  std::vector<std::string> notes;
  std::string pinned;  // the [[toolkits]] range, when pinned
  std::string libdevice;
};

struct ToolkitListing {
  std::vector<ToolkitDescription> toolkits;
  struct Route {
    std::string target;
    int toolkit = -1;  // index into toolkits
    bool supported = false;
    std::string reason;
  };
  std::vector<Route> routes;
  std::string policy;
  int fatbin_toolkit = -1;
  // The Triton builds the daemon found, the default first; a build it could
  // not use has only `error`.
  // A plugin package installed in a build's environment (uTLX), or a
  // library the daemon's configuration gives it (no distribution).
  struct TritonPlugin {
    std::string distribution, version;
    std::vector<std::pair<std::string, std::string>> libraries;  // path, sha256
    std::string stages_hook_sha256;
    std::map<std::string, std::string> environment;  // configured variables
  };
  struct TritonBuild {
    std::string name, version, distribution, python;
    std::vector<std::string> backends;
    std::vector<uint32_t> cuda_archs;
    std::vector<std::string> hip_archs, plugins, ptxas, options;
    std::vector<TritonPlugin> installed_plugins, configured_plugins;
    std::string plugin_loader;
    // Another build's newer ptxas-blackwell, for these CUDA archs.
    struct BorrowedPtxas {
      std::string path, version, sha256, from_build;
      std::vector<uint32_t> cuda_archs;
    } borrowed_ptxas;
    std::string libtriton_sha256;
    bool tlx = false;
    std::string tlx_provider;
    bool is_default = false;
    std::string error;
  };
  std::vector<TritonBuild> triton;
};

struct PipelineDescription {
  std::string name;
  std::string toml;  // the effective pipeline, in the configuration's syntax
  std::vector<std::string> known_pipelines;
  std::vector<std::string> plugins;  // "name version"
};

// A kernel to plan or launch: compiled from `compile` (or found in the
// daemon's cache under its key), or named by a cache `key`.
struct KernelRef {
  CompileRequest compile;
  std::string key;     // used when compile.input is empty
  std::string kernel;  // "vector_add", "scale<float>" or the lowered name
  // For a compile with several targets: the GPU to plan for ("cuda:100");
  // empty: the daemon's GPU.
  std::string device_target;
};

struct PlannedAttribute {
  std::string name;  // cuda.h spelling
  int id = 0;
  std::vector<int64_t> values;
};

// The launch plan: every function and launch attribute kjit sets, by its
// cuda.h name, with values.
struct PlannedLaunch {
  std::string kernel;  // lowered name
  std::string target;
  Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t static_shared_bytes = 0;
  std::vector<PlannedAttribute> function_attributes;
  std::vector<PlannedAttribute> launch_attributes;
  bool oversized_shared_memory = false;
  bool rests_on_ptx = false;
  bool limits_from_device = false;
  std::vector<std::string> notes;
  std::string description;  // one item a line
  KernelInfo kernel_info;
  std::string key;
};

// One kernel argument for a remote launch: a scalar, or a buffer the daemon
// allocates, fills with `data`, and optionally sends back.
struct LaunchBuffer {
  std::string data;
  uint64_t size = 0;  // device allocation; 0 = data.size()
  bool return_contents = false;
};
struct LaunchValue {
  enum class Kind { i32, u32, i64, u64, f32, f64, buffer } kind = Kind::i32;
  int64_t integer = 0;   // i32, u32, i64, u64
  double real = 0;       // f32, f64
  LaunchBuffer buffer;
};

struct RemoteLaunchResult {
  std::vector<std::string> outputs;  // per argument; filled for buffers with return_contents
  double kernel_ms = 0;
  PlannedLaunch plan;
};

struct CacheTierStats {
  std::string tier;  // "memory", "disk", "redis", "reapi"
  uint64_t hits = 0, misses = 0, puts = 0, bytes = 0, entries = 0, evictions = 0, corruptions = 0, errors = 0,
           skipped = 0, answered = 0;
};

// Client blobs (what Triton's cache manager stores), counted apart from
// compiles: CacheStats' lookups and misses never include them. Reads a
// client made from the disk tier directly never reach the daemon and are
// not counted.
struct CacheBlobStats {
  uint64_t puts = 0, put_bytes = 0;
  uint64_t gets = 0, hits = 0, misses = 0;  // one per name; a group counts its members
  uint64_t groups_put = 0, group_gets = 0, group_hits = 0;  // group_hits: every member found
  uint64_t put_conflicts = 0;  // puts that found other bytes stored under their identity: the first stays
  // Claims on groups (Client::claim_blob_group), counted by the daemon asked.
  uint64_t claims = 0, claim_hits = 0;  // claims granted; claim calls answered with the group
  uint64_t claim_waits = 0, claim_wait_ms = 0;  // claim calls that waited for another holder, and for how long
  uint64_t claim_timeouts = 0;    // waits that reached their bound
  uint64_t claims_abandoned = 0;  // claims that ended without their group
  uint64_t claims_refused = 0;    // over a [limits] max_claim* bound
};

// One cache namespace's figures (kjit.v1.NamespaceStats): its compile
// lookups, what it holds in the memory and disk tiers, and its share of them.
struct CacheNamespaceStats {
  std::string ns;  // "": the default namespace
  uint64_t lookups = 0, misses = 0, compiles = 0, joined = 0;
  double compile_ms_saved = 0;
  uint64_t memory_hits = 0, disk_hits = 0, redis_hits = 0, reapi_hits = 0;
  uint64_t memory_bytes = 0, memory_entries = 0, memory_evictions = 0;
  uint64_t disk_bytes = 0, disk_entries = 0, disk_evictions = 0;
  uint64_t max_bytes = 0;  // its share of each of the memory and disk tiers; 0: none
};

// The compile workers' precompiled headers (kjit.v1.PchStats).
struct CachePchStats {
  uint64_t hits = 0, creations = 0, fallbacks = 0, evictions = 0, firsts = 0, bytes = 0;
};

struct CacheStats {
  std::vector<CacheTierStats> tiers;
  uint64_t lookups = 0, misses = 0, compiles = 0, joined = 0, fleet_waits = 0, lease_timeouts = 0;
  double compile_ms_saved = 0;
  CacheBlobStats blobs;
  // The operator: every namespace. Anyone else: its own alone, and the
  // figures above are that namespace's (namespace_only).
  std::vector<CacheNamespaceStats> namespaces;
  bool namespace_only = false;
  CachePchStats pch;  // the operator's answer only
};

// Every counter of the stats above, each named once, as the wire
// (kjit.v1.TierStats, BlobStats, StatsResponse) and `kjit cache stats
// --json` name it: visit(name, counter), counter a uint64_t& or double&
// (const for const stats), in declaration order. CacheStats' own counters
// only: its tiers and blobs are visited apart. The client reads the answer
// into the counters by these names and the CLI prints them from here, so a
// counter added to the wire and to a struct here needs nothing more.
template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, CacheTierStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("hits", stats.hits);
  visit("misses", stats.misses);
  visit("puts", stats.puts);
  visit("bytes", stats.bytes);
  visit("entries", stats.entries);
  visit("evictions", stats.evictions);
  visit("corruptions", stats.corruptions);
  visit("errors", stats.errors);
  visit("skipped", stats.skipped);
  visit("answered", stats.answered);
}

template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, CacheBlobStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("puts", stats.puts);
  visit("put_bytes", stats.put_bytes);
  visit("gets", stats.gets);
  visit("hits", stats.hits);
  visit("misses", stats.misses);
  visit("groups_put", stats.groups_put);
  visit("group_gets", stats.group_gets);
  visit("group_hits", stats.group_hits);
  visit("put_conflicts", stats.put_conflicts);
  visit("claims", stats.claims);
  visit("claim_hits", stats.claim_hits);
  visit("claim_waits", stats.claim_waits);
  visit("claim_wait_ms", stats.claim_wait_ms);
  visit("claim_timeouts", stats.claim_timeouts);
  visit("claims_abandoned", stats.claims_abandoned);
  visit("claims_refused", stats.claims_refused);
}

template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, CachePchStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("hits", stats.hits);
  visit("creations", stats.creations);
  visit("fallbacks", stats.fallbacks);
  visit("evictions", stats.evictions);
  visit("firsts", stats.firsts);
  visit("bytes", stats.bytes);
}

template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, CacheStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("lookups", stats.lookups);
  visit("misses", stats.misses);
  visit("compiles", stats.compiles);
  visit("joined", stats.joined);
  visit("fleet_waits", stats.fleet_waits);
  visit("lease_timeouts", stats.lease_timeouts);
  visit("compile_ms_saved", stats.compile_ms_saved);
}

template <typename Stats, typename Visit>
  requires std::is_same_v<std::remove_const_t<Stats>, CacheNamespaceStats>
void for_each_counter(Stats& stats, Visit&& visit) {
  visit("lookups", stats.lookups);
  visit("misses", stats.misses);
  visit("compiles", stats.compiles);
  visit("joined", stats.joined);
  visit("compile_ms_saved", stats.compile_ms_saved);
  visit("memory_hits", stats.memory_hits);
  visit("disk_hits", stats.disk_hits);
  visit("redis_hits", stats.redis_hits);
  visit("memory_bytes", stats.memory_bytes);
  visit("memory_entries", stats.memory_entries);
  visit("memory_evictions", stats.memory_evictions);
  visit("disk_bytes", stats.disk_bytes);
  visit("disk_entries", stats.disk_entries);
  visit("disk_evictions", stats.disk_evictions);
  visit("max_bytes", stats.max_bytes);
  visit("reapi_hits", stats.reapi_hits);
}

struct CacheListing {
  std::string key;
  uint64_t bytes = 0;
  int64_t last_access_unix = 0;
  // Listed with a blob namespace: which of the caller's client blobs the
  // entry holds ("client-blob" or "client-blob-group"); empty otherwise.
  std::string blob_kind, blob_namespace, blob_key, blob_name;
};

struct CacheGcResult {
  uint64_t removed_entries = 0, removed_bytes = 0, entries_after = 0, bytes_after = 0;
};

struct CacheVerifyResult {
  uint64_t checked = 0, removed = 0;
  uint64_t temp_files_removed = 0;  // temp files of writers that died mid-write
};

// A portable cache bundle (`kjit cache export` / `import`; docs/bundle-format.md).
struct BundleExportOptions {
  std::string ns;                    // empty: the caller's own namespace; another is the operator's to name
  std::vector<std::string> targets;  // only compile entries built for these (no client blobs); empty: all
  bool recipes_only = false;
};

struct BundleExportResult {
  uint64_t entries = 0, blobs = 0, recipes = 0;
  uint64_t bytes = 0;  // the bundle's size
};

struct BundleImportSkip {
  std::string reason;
  uint64_t count = 0;
  std::string example;  // the first key (or recipe digest) skipped for it
};

struct BundleImportResult {
  uint64_t entries_imported = 0, blobs_imported = 0, recipes_imported = 0;
  uint64_t skipped = 0;  // all reasons together
  std::vector<BundleImportSkip> skips;
  uint32_t entry_format = 0;
  std::vector<std::string> toolchains;  // what the bundle's entries were built with
  uint64_t bundle_bytes = 0;
  std::string ns;  // where its records went
};

// A client blob: opaque bytes stored under (namespace, key, name).
struct Blob {
  std::string name;
  std::string data;
};

// A group of client blobs (get_blob_group), the group itself having been
// found.
struct BlobGroup {
  // The members found, in the group's order; those past the daemon's answer
  // size come last, fetched one by one.
  std::vector<Blob> members;
  std::vector<std::string> missing;  // members the cache no longer holds
  bool complete() const { return missing.empty(); }
};

// What Client::claim_blob_group got: the group (another caller compiled
// it), the claim (compile, put the members and the group), or neither
// (another caller held the claim for the whole wait: compile without one).
// A claim is held while this object lives and the group is not put:
// destroying it, or release(), gives the claim up at once, so a caller that
// throws hands it to the next waiter. Move-only.
class BlobClaim {
 public:
  enum class Outcome { hit, claimed, timed_out };

  BlobClaim(BlobClaim&&) noexcept;
  BlobClaim& operator=(BlobClaim&&) noexcept;
  ~BlobClaim();

  Outcome outcome() const;
  // With hit: the group, every member found.
  const BlobGroup& group() const;
  // With claimed: what ReleaseBlobClaim takes; how long the claim outlives
  // a daemon that dies holding it; whether it holds across the daemons
  // sharing a Redis tier (false: in the daemon asked only).
  const std::string& claim_id() const;
  std::chrono::milliseconds lease() const;
  bool fleet() const;
  // Gives the claim up (failed: the compile failed). A claim whose group
  // was put has ended already: releasing it changes nothing.
  Status release(bool failed = false);

  // A hit that asked no daemon: the group, read by LocalCache.
  static BlobClaim found(BlobGroup group);

 private:
  friend class Client;
  struct Impl;
  explicit BlobClaim(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One side of an explanation: a request, or a key already in the cache
// (used when request.input is empty).
struct ExplainSide {
  CompileRequest request;
  std::string key;
};

struct KeyExplanation {
  struct Difference {
    std::string name, left, right;
    bool present_left = true, present_right = true;
  };
  std::string left_key, right_key;
  std::vector<KeyComponent> left, right;
  std::vector<Difference> differences;
};

// What a reload of kjitd's configuration put in force (`kjit admin reload`).
struct ReloadResult {
  std::vector<std::string> reloaded;       // "tenants", "tls", "log_file", and changed keys applied at once
  std::vector<std::string> needs_restart;  // changed keys whose new value waits for a restart
};

// The daemon's status (`kjit health --verbose`): how compiles are confined
// and what each may use.
struct DaemonStatus {
  std::string version;
  std::string confinement_mode;         // "landlock", "off" or "in-process"
  std::string confinement;              // what the daemon checked at start
  std::string worker_confinement;       // what the last worker started applied; empty before one started
  uint64_t memory_bytes = 0, cpu_seconds = 0, open_files = 0, output_bytes = 0, timeout_seconds = 0;
  uint32_t max_workers = 0, live_workers = 0;
  uint32_t ready_workers = 0;  // started and waiting for a compile
  uint32_t busy_workers = 0;   // running a compile, or starting for one
  // The live workers by class ("general", "tileir", "general background",
  // "tileir background"): classes with workers only.
  std::map<std::string, uint32_t> live_workers_by_class;
  // The daemon's configuration, key by key in its table's order (TOML path,
  // value, flag); given to the local operator only.
  struct Setting {
    std::string key, value, flag;
  };
  std::vector<Setting> settings;
  uint64_t workers_started = 0;
  double last_worker_start_ms = 0;
  // The background builds for the fleet's other targets; targets empty:
  // the daemon has none.
  struct Fleet {
    std::vector<std::string> targets;
    uint64_t queued = 0, running = 0, compiled = 0, cached = 0, failed = 0, dropped = 0, yielded = 0;
    std::string last_failure;
  } fleet;
  // The cache's tiers, top first ("memory", "disk", "redis", "reapi"; empty:
  // the cache is off), and what daemons share beyond its entries.
  std::vector<std::string> cache_tiers;
  std::string cache_sharing;
};

// A recipe: a request the daemon compiled, kept without its target
// (`kjit recipes`), named by the SHA-256 of its spelling.
struct RecipeSummary {
  std::string digest;
  InputKind input_kind = InputKind::cuda_source;
  std::string input_name;
  ArtifactKind artifact = ArtifactKind::cubin;  // cubin: the target's own binary
  uint64_t bytes = 0;
  int64_t created_unix = 0;
  int64_t last_asked_unix = 0;
  std::string last_target;
};

struct Recipe {
  RecipeSummary summary;
  CompileRequest request;  // target empty: set one and compile it
};

// A seal on compiles after warm-up (`kjit warm --seal`).
struct WarmupSealState {
  bool all_namespaces = false;
  std::string ns;
  std::string after_warmup;  // "count", "warn" or "refuse"
  int64_t sealed_unix = 0;
};

struct ClientOptions {
  ClientOptions() = default;
  // `ClientOptions{std::chrono::seconds(10)}`: the timeout, the rest as default.
  ClientOptions(std::chrono::milliseconds call_timeout) : timeout(call_timeout) {}

  // Per call; a compile of a large kernel can take many seconds.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // TLS to a TCP address: the PEM file of the CA that signed kjitd's
  // certificate. Empty: plaintext (the unix socket, or --insecure-listen).
  std::string tls_ca_file;
  // The client's own certificate and key (PEM), for a daemon that asks for
  // one (mutual TLS, --tls-client-ca).
  std::string tls_cert_file, tls_key_file;
  // The name checked in the daemon's certificate instead of the address's
  // host, e.g. when connecting by IP to a certificate issued for a name.
  std::string tls_server_name;
  // Sent with every call as `authorization: Bearer <token>` (a tenant's
  // token). Never logged.
  std::string token;
};

class Client {
 public:
  // `address`: a unix socket path ("/run/kjit/kjitd.sock"), or a gRPC target
  // ("unix:/path", "127.0.0.1:7878"). Connects lazily. A TLS file that
  // cannot be read makes every call fail with FAILED_PRECONDITION naming it.
  explicit Client(const std::string& address, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // Errors carry the daemon's code, message and full compiler log; an
  // unreachable daemon is ErrorCode::unavailable.
  Result<CompileResult> compile(const CompileRequest& request) const;

  // The pipeline a compile of `input` would run, after every edit.
  Result<PipelineDescription> describe_pipeline(InputKind input, const std::string& target,
                                                const std::string& pipeline) const;

  // The plan the daemon would apply to launch the kernel; an impossible
  // launch is invalid_argument with the planner's message.
  Result<PlannedLaunch> plan_launch(const KernelRef& kernel, const LaunchConfig& config) const;

  // Launch on the daemon's GPU (FAILED_PRECONDITION without one).
  Result<RemoteLaunchResult> launch(const KernelRef& kernel, const LaunchConfig& config,
                                    const std::vector<LaunchValue>& args) const;

  // The compile cache (FAILED_PRECONDITION when the daemon runs without one).
  Result<CacheStats> cache_stats() const;
  Result<std::vector<CacheListing>> cache_list(uint32_t limit = 0) const;  // disk tier, most recent first
  // Only the caller's client blobs and groups stored under blob_namespace
  // (put_blob's namespace), each with its identity.
  Result<std::vector<CacheListing>> cache_list(uint32_t limit, const std::string& blob_namespace) const;
  Status cache_remove(const std::string& key) const;
  Result<CacheGcResult> cache_gc(uint64_t max_bytes) const;
  Result<CacheVerifyResult> cache_verify() const;
  // Why two requests (or keys) differ: their key components side by side.
  Result<KeyExplanation> explain(const ExplainSide& left, const ExplainSide& right) const;
  // A bundle of the cache: its bytes go to `write` as they come (an error
  // it returns cancels the export); what it holds.
  Result<BundleExportResult> export_bundle(const BundleExportOptions& options,
                                 const std::function<Status(std::string_view bytes)>& write) const;
  // Loads a bundle into namespace ns (empty: the caller's own). `read` fills
  // up to `capacity` bytes of the bundle and says how many, 0 at its end.
  Result<BundleImportResult> import_bundle(const std::string& ns,
                                           const std::function<Result<size_t>(char* buffer, size_t capacity)>& read) const;

  // Client blobs, in the cache's tiers under (namespace, key, name); the
  // daemon checks every field (1 to 256 bytes, no NUL; a name is a file
  // name: no '/', not "." or ".."). A miss is std::nullopt, not an error.
  // put_blob returns the cache key it is stored under, as cache_list shows
  // it; data over [limits] max_blob_bytes is resource_exhausted. The first
  // writer of a blob wins, unless `replace`: then data takes the place of
  // other stored bytes (readers get the old or the new), except in a
  // [[blob_sharing]] namespace, where that is failed_precondition.
  Result<std::string> put_blob(const std::string& ns, const std::string& key, const std::string& name,
                               const std::string& data, bool replace = false) const;
  Result<std::optional<std::string>> get_blob(const std::string& ns, const std::string& key,
                                              const std::string& name) const;
  // Records `names` (blobs under ns and key, put first) as a group; groups
  // and blobs are apart, so a group may have a member's name.
  Status put_blob_group(const std::string& ns, const std::string& key, const std::string& group,
                        const std::vector<std::string>& names) const;
  // The group and its members in one round trip (more only for members past
  // the daemon's answer size); std::nullopt when there is no such group.
  Result<std::optional<BlobGroup>> get_blob_group(const std::string& ns, const std::string& key,
                                                  const std::string& group) const;
  // The group, or its claim, waiting at most `wait` while another caller
  // holds it (at most the daemon's [limits] max_claim_wait_ms). One caller
  // holds a group's claim at a time, across the daemons sharing Redis too;
  // put_blob_group ends it. resource_exhausted past the daemon's bounds on
  // waiters: compile without a claim, as after a timed_out.
  Result<BlobClaim> claim_blob_group(const std::string& ns, const std::string& key, const std::string& group,
                                     std::chrono::milliseconds wait) const;

  // Recipes of the caller's namespace (ns empty), or, for the operator, of
  // namespace ns; most recently asked first, asked at or after since_unix.
  Result<std::vector<RecipeSummary>> list_recipes(const std::string& ns = {}, int64_t since_unix = 0,
                                                  uint32_t limit = 0) const;
  Result<Recipe> get_recipe(const std::string& ns, const std::string& digest) const;
  // Whether there was such a recipe.
  Result<bool> remove_recipe(const std::string& ns, const std::string& digest) const;
  // The operator's: seal warm-up (after_warmup "count", "warn", "refuse",
  // or empty for the daemon's default) or lift a seal, of every namespace
  // or of ns; the seals in force after it.
  Result<std::vector<WarmupSealState>> set_seal(bool unseal, bool all_namespaces, const std::string& ns,
                                                const std::string& after_warmup = {}) const;

  // Sends payload and gets it back: the RPC floor, for benchmarks.
  Result<std::string> echo(const std::string& payload) const;

  // "SERVING" when the daemon is up.
  Result<std::string> health() const;
  Result<DaemonStatus> status() const;
  // The operator's (permission_denied for anyone else): kjitd reads its
  // configuration again, as on SIGHUP. A refused reload is the error
  // (invalid_argument or failed_precondition naming the file), and the
  // daemon serves on with the configuration it had.
  Result<ReloadResult> reload() const;
  // The CUDA toolkits the daemon found and which builds each target.
  Result<ToolkitListing> toolkits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kjit
