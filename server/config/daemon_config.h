// kjitd's configuration: embedded defaults, then a TOML file, then flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/triton/triton_plugin_settings.h"
#include "kjit/status.h"
#include "pipeline/pipeline_spec.h"
#include "pipeline/toolkit_policy.h"
#include "target/target.h"

namespace kjit {

// One worker process per core, two at least.
uint32_t default_compile_workers();

// What one compile may use in its worker process. A compile past a bound is
// stopped and answered RESOURCE_EXHAUSTED naming the bound.
struct CompileBounds {
  // Address space a compile may add to a ready worker (the toolchains a
  // worker has mapped, about 1 GiB of address space but little memory, are
  // not counted). 4 GiB: two workers on a 2-core machine with 8-16 GiB.
  // Not enforced in AddressSanitizer builds, whose shadow memory the limit
  // would count.
  uint64_t memory_bytes = 4ull << 30;
  uint64_t cpu_seconds = 300;            // CPU time of one compile
  uint64_t open_files = 512;             // file descriptors a worker may hold
  uint64_t output_bytes = 256ull << 20;  // the artifact, and any file a toolchain writes
};

// A toolkit for a range of targets, e.g. a newer nvJitLink for cuda:100 and up.
struct ToolkitRange {
  TargetRange targets;
  std::string cuda_home;
};

// The REAPI tier ([cache.reapi]): a Remote Execution API server's
// ActionCache and CAS, after the local tiers (and Redis, when both are set).
struct ReapiConfig {
  std::string endpoint;     // grpc://host:port, grpcs://host:port, unix:/path; empty: no REAPI tier
  std::string instance;     // the REAPI instance name
  std::string tls_ca;       // grpcs: PEM roots (default: the system's)
  std::string token_file;   // a bearer token, read again when the file changes
  std::vector<std::string> headers;  // "Name: value", sent with every call
  uint64_t timeout_ms = 3000;        // each call
  // Where a tenant's namespace goes: "action" (into the Action, one
  // instance for all) or "instance" (<instance>/<namespace>, for servers
  // that keep instances apart).
  std::string namespaces = "action";
  uint64_t write_queue_bytes = 256ull << 20;  // writes behind answers, bounded
};

// The compile cache's tiers. Defaults work with no configuration at all.
struct CacheConfig {
  bool enabled = true;                         // false: every request compiles
  uint64_t memory_bytes = 256ull << 20;        // 0: no memory tier
  bool disk = true;
  std::string directory;                       // empty: $XDG_CACHE_HOME/kjit or ~/.cache/kjit
  uint64_t disk_bytes = 10ull << 30;
  std::string redis;                           // "host:port" or a unix socket path; empty: no Redis tier
  uint64_t redis_ttl_seconds = 7 * 24 * 3600;
  ReapiConfig reapi;
  uint64_t lease_wait_ms = 60'000;             // how long to wait for another daemon's compile
  // Publish the direct-read manifest beside the socket (direct_read_manifest.h),
  // so local clients may read blobs from the disk tier without an RPC.
  bool direct_reads = true;
  // Recipes (server/compile/recipe_book.h): requests kept without their
  // target, per namespace, bounded in count (0: none kept) and bytes.
  uint64_t max_recipes = 10000;
  uint64_t max_recipe_bytes = 256ull << 20;
};

// TLS for the TCP listener: PEM files read at start and at each reload.
struct TlsConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // set: clients must present a certificate it signed (mutual TLS)
};

// How many compiles may wait or run at once, before RESOURCE_EXHAUSTED with a
// retry hint. A compile that joins an identical one in flight counts too.
struct AdmissionConfig {
  uint32_t max_pending_compiles = 256;     // all tenants together
  uint32_t max_pending_per_tenant = 64;    // one tenant (the local operator is one)
  uint32_t retry_after_ms = 1000;          // the hint given with a refusal
};

// A [[blob_sharing]] entry: the socket users it names (members of `group`,
// by their primary or supplementary groups, and `uids`) keep their client
// blobs in namespace `ns` together, instead of one namespace each.
struct BlobSharing {
  std::string group;
  std::vector<uint32_t> uids;
  std::string ns;  // "namespace" in the file
};

struct DaemonConfig {
  std::string socket_path;                       // empty: default_socket_path()
  std::string socket_group;                      // group that may connect (socket mode 0660); empty: the daemon's
  // TCP "host:port" to listen on besides the socket; empty: none. It needs
  // tls (a certificate and key) unless insecure_listen says plaintext is meant.
  std::string listen_address;
  bool insecure_listen = false;                  // plaintext TCP allowed (a warning at start)
  TlsConfig tls;                                 // [tls]
  // Tenants and their token digests (TOML); empty: no tenants, one shared
  // namespace, no tokens asked for.
  std::string tenants_file;
  // With tenants: whether the unix socket asks for a token too (the TCP
  // listener always does). Off: a socket request without a token is the
  // local operator, in the default namespace.
  bool socket_requires_token = false;
  // Operators on the unix socket (who may remove entries, collect the whole
  // disk tier, verify it) are root, the daemon's own user, and members of
  // this group; empty: no group.
  std::string admin_group;
  // [[blob_sharing]]: socket users who share their client blobs on purpose
  // (otherwise each user's blobs are its own).
  std::vector<BlobSharing> blob_sharing;
  AdmissionConfig admission;                     // [admission]
  // Prometheus metrics on http://metrics_address:metrics_port/metrics; 0: none.
  uint16_t metrics_port = 0;
  std::string metrics_address = "127.0.0.1";
  // The metrics port asks for `authorization: Bearer <token>`: the token's
  // SHA-256 in hex (as tenants' tokens are kept); empty: no token asked.
  std::string metrics_token_sha256;
  // The metrics port speaks TLS with the TCP listener's certificate and key.
  bool metrics_tls = false;
  std::string log_file;                          // empty: stderr; a reload (SIGHUP) reopens it
  uint32_t drain_timeout_s = 30;                 // SIGTERM: in-flight requests get this long
  uint64_t max_input_bytes = 16ull << 20;        // one request's source / PTX
  uint64_t max_header_bytes = 64ull << 20;       // all headers of one request, together
  uint32_t max_headers = 4096;                   // number of headers in one request
  uint32_t max_options = 256;
  uint32_t max_name_expressions = 1024;
  uint64_t max_launch_bytes = 256ull << 20;      // all buffers of one Launch request
  uint64_t max_blob_bytes = 64ull << 20;         // one client blob (Cache.PutBlob)
  // Claims on blob groups (Cache.ClaimBlobGroup): the longest wait a caller
  // may ask for, and how many may wait or hold claims at once.
  uint64_t max_claim_wait_ms = 3'600'000;
  uint32_t max_claim_waiters_per_key = 64;
  uint32_t max_claim_waiters_per_namespace = 1024;
  uint32_t max_claims_per_namespace = 1024;
  uint64_t compile_timeout_s = 300;              // a compile running longer is stopped
  CompileBounds compile_bounds;                  // [limits] compile_* : what one compile may use
  // How compile workers are confined: "landlock" (Landlock, seccomp and
  // no_new_privs; kjitd refuses to start where the kernel lacks them) or
  // "off" (unconfined, logged as a warning).
  std::string sandbox = "landlock";
  // Compiles run in this many worker processes at most (0: inside the
  // daemon, as the tests of the pipeline do).
  uint32_t compile_workers = default_compile_workers();
  // Each worker keeps NVRTC's automatic precompiled headers in its private
  // directory, so a miss sharing its includes with an earlier one parses
  // them once per worker; pch_bytes bounds one worker's PCH files (0: no
  // bound; each is 100-200 MiB for CUB or cuda::std).
  bool pch = true;
  uint64_t pch_bytes = 1ull << 30;
  std::string default_target = "cuda:90";        // when a request names none
  std::string cuda_home;                         // empty: $CUDA_HOME, then the build's toolkit
  std::string log_level = "info";                // spdlog level name
  int device = 0;                                // CUDA device the Launch RPC uses
  PipelineConfig pipelines;                      // [pipelines.NAME] and [[edits]]
  std::vector<std::string> plugins;              // kjit plugin libraries (also $KJIT_PLUGIN_PATHS)
  std::vector<std::string> llvm_pass_plugins;    // LLVM pass plugins for llvm-passes
  std::vector<ToolkitRange> toolkits;            // [[toolkits]] from/to/cuda_home
  // Where else to look for CUDA toolkits: NVIDIA's NVRTC/nvJitLink wheels in
  // a Python environment's prefix, a site-packages directory, or an
  // nvidia/cuNN directory. The system toolkit and the project's local prefix
  // are always looked at.
  std::vector<std::string> toolkit_paths;
  // The project's own prefix of NVIDIA's wheels (scripts/install-deps.sh);
  // unset: the one this build names (.deps/cuda-wheels), "": none.
  std::optional<std::string> local_toolkit_prefix;
  // tileiras, for Tile IR input; empty: looked for as nvidia/cuNN/bin/tileiras
  // in toolkit_paths, then in the project's .deps/tileiras.
  std::string tileiras;
  ToolkitPolicy toolkit_policy = ToolkitPolicy::system_first;  // which toolkit builds a target
  CacheConfig cache;                             // [cache]
  // What a miss does once warm-up is over (server/compile/warmup_seal.h):
  // "off" (the daemon starts unsealed), or it starts sealed and a miss is
  // counted ("count"), also logged as a warning ("warn"), or refused ("refuse").
  std::string after_warmup = "off";
  // [fleet] targets: the GPU types the fleet runs. A request compiled for
  // one of them is built in the background for the others of its vendor
  // (server/compile/fleet_builds.h); empty: none.
  std::vector<Target> fleet_targets;
  // [triton] builds: Triton installations for Triton input (a virtual
  // environment's directory or a Python interpreter), before the project's
  // .deps/triton-builds.
  std::vector<std::string> triton_builds;
  // [triton] plugins: Triton pass plugin libraries every build loads
  // (absolute paths); their digests are in the key of every Triton compile.
  std::vector<std::string> triton_plugins;
  // [[triton.plugin]]: plugins for the builds they name (a library, or an
  // installed package's settings, with the variables they read). A daemon
  // with any checks them against its builds at start and refuses to serve
  // when one cannot be loaded.
  std::vector<TritonPluginSetting> triton_plugin_settings;
  // [triton] prestart: find the Triton builds and start one Triton worker
  // (the default build imported) while the daemon starts, so that the first
  // Triton request finds it warm; false: both at the first Triton request.
  bool triton_prestart = true;
  // [triton] prestart_builds: more builds whose interpreters the prestarted
  // Triton worker starts besides the default's (names as `kjit toolkits`
  // lists them; "*": every build found), for fleets whose processes run
  // several builds (upstream Triton and fbtriton, say).
  std::vector<std::string> triton_prestart_builds;
  // [triton] descriptions_dir: where the builds' descriptions are kept
  // across starts, so that builds unchanged since are not asked again
  // (backends/triton/triton_descriptions.h); empty: triton-builds/ in the
  // disk cache's directory, or nowhere without a disk cache.
  std::string triton_descriptions_dir;
};


// Reads a TOML file over the defaults. Unknown keys are errors, so a typo
// never silently leaves a default in force. The scalar keys, with their
// types and ranges, are the rows of config_keys.h ("cache.disk_bytes" is
// [cache] disk_bytes); besides them the file takes the arrays plugins,
// llvm_pass_plugins and toolkit_paths, [[toolkits]] (from, to, cuda_home),
// [triton] (builds), [fleet] (targets), [[blob_sharing]],
// and [pipelines.NAME] and [[edits]] (src/pipeline/pipeline_toml.h). The
// README's configuration table documents every one, checked against the rows.
Status load_config_file(const std::string& path, DaemonConfig& config);
// The file's text, for a caller that keeps it (the daemon, for its workers).
Result<std::string> read_config_file(const std::string& path);
// The same from the file's text (`path` names it in messages).
Status load_config_text(const std::string& text, const std::string& path, DaemonConfig& config);

}  // namespace kjit
