// kjit_bench_cache: what a compile-cache hit costs through kjitd, tier by
// tier (memory, disk, Redis), next to the bare RPC floor (Echo carrying the
// same payload) and a cold compile; memory-hit throughput with 1, 4 and 16
// clients; one compile for 32 concurrent identical requests; the client
// library's direct read of the disk tier (LocalCache); daemon start time over
// a large cache directory; resident memory against the memory tier's budget.
// Prints tables and the targets as met / NOT met. It asserts nothing
// about timings and exits 1 only when something fails outright.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <absl/synchronization/mutex.h>
#include <xxhash.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cache/cache_entry.h"
#include "pipeline/cache_key.h"
#include "cache/disk_store.h"
#include "kjit/internal/artifact_record.pb.h"
#include "async_load.h"
#include "bench_options.h"
#include "client/compile_request_wire.h"
#include "kjit/client.h"
#include "kjit/local_cache.h"
#include "redis_server.h"
#include "sample_stats.h"
#include "support/daemon_process.h"
#include "text_table.h"

namespace kjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

// How much of everything to do; --quick shrinks it to a smoke run.
struct Params {
  int pairs;            // echo / memory-hit pairs per payload
  int tier_pairs;       // echo / disk, Redis and LocalCache pairs per payload
  int restarts;         // daemon restarts, each giving one first-after-restart disk hit per payload
  int cold_small;       // cold compiles of the 8 KiB kernel
  int cold_large;       // cold compiles of the 256 KiB kernel (seconds each)
  double window_s;      // length of each throughput measurement
  int rounds;           // hit / echo windows alternated per throughput point; the median is kept
  int startup_entries;  // entries on disk for the start-time measurement
  int startup_runs;     // starts with them (and as many with an empty directory)
  int bound_entries;    // 256 KiB entries pushed through a 32 MiB memory tier
};
constexpr Params k_full_run{2000, 500, 4, 8, 3, 1.0, 5, 100'000, 3, 256};
constexpr Params k_quick_run{200, 100, 1, 2, 1, 0.3, 1, 10'000, 1, 160};

constexpr int k_throughput_clients[] = {1, 4, 16};
constexpr int k_stampede_clients = 32;
constexpr uint64_t k_bound_budget_bytes = 32ull << 20;
constexpr uint64_t k_default_memory_budget = 256ull << 20;  // CacheConfig::memory_bytes
constexpr size_t k_startup_payload_bytes = 512;
constexpr decltype(statfs::f_type) k_tmpfs_magic = 0x01021994;  // TMPFS_MAGIC, linux/magic.h
constexpr auto k_daemon_start_deadline = std::chrono::seconds(120);
constexpr auto k_health_poll = std::chrono::milliseconds(2);
constexpr auto k_exit_grace = std::chrono::seconds(1);
constexpr auto k_stop_deadline = std::chrono::seconds(15);

// The targets.
constexpr double k_memory_hit_target = 1.3;     // × echo p50
constexpr double k_disk_hit_target = 2.0;       // × echo p50
constexpr double k_local_target = 0.3;          // × echo p50
constexpr double k_throughput_target = 15'000;  // memory hits/s with 16 clients
constexpr double k_startup_target_ms = 1000;

std::string kib(uint64_t bytes) {
  return fixed(static_cast<double>(bytes) / 1024.0, 1) + " KiB";
}

std::string mib(uint64_t bytes) {
  return fixed(static_cast<double>(bytes) / (1024.0 * 1024.0), 1) + " MiB";
}

// A fresh directory (mkdtemp), removed with everything in it when this goes
// away or when remove() is called.
class ScratchDir {
 public:
  static Result<ScratchDir> create(const std::string& parent) {
    std::string path = parent + "/kjit-bench-cache-XXXXXX";
    if (!::mkdtemp(path.data())) return make_error(ErrorCode::internal, "mkdtemp failed under " + parent);
    return ScratchDir(std::move(path));
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir() { remove(); }

  const std::string& path() const { return path_; }

  // Seconds the removal took: 100k entries on a slow file system take long.
  double remove() {
    if (path_.empty()) return 0;
    const auto start = Clock::now();
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    path_.clear();
    return ms_since(start) / 1000;
  }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// ---- the kernels ----------------------------------------------------------

// A module whose cubin size is set by its shape: `kernels` kernels, each an
// unrolled chain of `unroll` dependent loads and FMAs (about 50 bytes of SASS
// per step, 1.7 KB per kernel besides). Many modest kernels rather than one
// huge unroll: ptxas time grows faster than linearly with one kernel's size,
// and 256 KiB in one kernel takes it over 10 s.
std::string payload_source(int kernels, int unroll) {
  std::string source =
      "template <int Seed>\n"
      "__device__ float chain(const float* __restrict__ in, int i, int n) {\n"
      "  float acc = Seed;\n"
      "#pragma unroll\n"
      "  for (int k = 0; k < " +
      std::to_string(unroll) +
      "; ++k) acc = fmaf(acc, in[i + k * n], (float)(k + Seed));\n"
      "  return acc;\n"
      "}\n";
  for (int k = 0; k < kernels; ++k)
    source += "extern \"C\" __global__ void payload_" + std::to_string(k) +
              "(const float* __restrict__ in, float* __restrict__ out, int n) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  out[i] = chain<" +
              std::to_string(k) + ">(in, i, n);\n}\n";
  return source;
}

struct PayloadSpec {
  const char* label;
  int kernels;
  int unroll;
};
constexpr PayloadSpec k_payload_specs[] = {{"8 KiB", 2, 32}, {"256 KiB", 64, 49}};

struct Payload {
  std::string label;
  std::string source;
  CompileRequest request;  // compiled once, then hit
  std::string key;
  std::string cubin;
  double first_compile_ms = 0;
};

// A request for the same kernel that is not in any cache: the comment
// changes the source digest and so the key. The run tag keeps a reused
// Redis from answering.
CompileRequest variant_of(const Payload& payload, const std::string& tag) {
  CompileRequest request = payload.request;
  request.input += "// " + tag + "\n";
  return request;
}

// ---- kjitd processes --------------------------------------------------------

struct MemoryUse {
  uint64_t rss_bytes = 0;   // VmRSS
  uint64_t peak_bytes = 0;  // VmHWM: the most it was ever resident
};

MemoryUse memory_use(pid_t pid) {
  MemoryUse use;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    auto field_kib = [&](std::string_view name) -> std::optional<uint64_t> {
      if (!line.starts_with(name)) return std::nullopt;
      return std::strtoull(line.c_str() + name.size(), nullptr, 10) * 1024;
    };
    if (auto v = field_kib("VmRSS:")) use.rss_bytes = *v;
    if (auto v = field_kib("VmHWM:")) use.peak_bytes = *v;
  }
  return use;
}

// The fields of /proc/<pid>/stat after the command name (which is in
// parentheses and may hold spaces): [0] is field 3 of stat(5), the state.
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::vector<std::string> fields;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return fields;
  std::string field;
  for (size_t i = close + 2; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ' ') {
      fields.push_back(field);
      field.clear();
    } else {
      field += text[i];
    }
  }
  return fields;
}

// CPU seconds (user + system, all threads) a process has used, in clock
// ticks (10 ms): fine over a throughput window.
double process_cpu_seconds(pid_t pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  // utime and stime: fields 14 and 15 of stat(5).
  if (fields.size() < 13) return 0;
  const double ticks = std::strtod(fields[11].c_str(), nullptr) + std::strtod(fields[12].c_str(), nullptr);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A kjitd with the flags given, serving on the socket given. It polls health
// more often than the default, since its start time is one of the figures,
// and stops within a grace period (see stop).
class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> start(const std::string& socket_path, const std::vector<std::string>& flags) {
    test::DaemonOptions options{flags};
    options.socket_path = socket_path;
    options.poll = k_health_poll;
    options.deadline = k_daemon_start_deadline;
    Result<std::unique_ptr<test::DaemonProcess>> daemon = test::DaemonProcess::start(std::move(options));
    if (!daemon) return daemon.error();
    return std::unique_ptr<Daemon>(new Daemon(std::move(daemon.value())));
  }

  const std::string& socket_path() const { return daemon_->socket_path(); }
  double startup_ms() const { return daemon_->startup_ms(); }
  MemoryUse memory() const { return memory_use(daemon_->pid()); }
  pid_t pid() const { return daemon_->pid(); }
  // SIGTERM, then wait for the exit. kjitd removes its socket once its gRPC
  // server has shut down; the process may then spend up to 10 s more in
  // gRPC's own teardown (grpc_shutdown waiting in grpc_iomgr_shutdown, seen
  // after heavy traffic, with no client connected). A daemon still there
  // k_exit_grace after its socket went is killed and counted: nothing is
  // measured after a stop, and the bench would otherwise spend a minute
  // waiting. Clients should be gone first (declared after the daemon).
  int stop() {
    if (daemon_->stopped() || !daemon_->running()) return daemon_->stop();
    daemon_->signal(SIGTERM);
    const auto signalled = Clock::now();
    std::optional<Clock::time_point> socket_gone;
    while (daemon_->running()) {
      if (!socket_gone && !std::filesystem::exists(socket_path())) socket_gone = Clock::now();
      if ((socket_gone && Clock::now() - *socket_gone > k_exit_grace) || Clock::now() - signalled > k_stop_deadline) {
        daemon_->signal(SIGKILL);
        ++killed_after_shutdown;
        break;
      }
      std::this_thread::sleep_for(k_health_poll);
    }
    ++stopped;
    return daemon_->stop();
  }
  ~Daemon() { stop(); }

  // Over the whole run: daemons stopped, and those killed in gRPC's teardown.
  static inline std::atomic<int> stopped{0}, killed_after_shutdown{0};

 private:
  explicit Daemon(std::unique_ptr<test::DaemonProcess> daemon) : daemon_(std::move(daemon)) {}
  std::unique_ptr<test::DaemonProcess> daemon_;
};

// ---- latency ----------------------------------------------------------------

struct Sample {
  double ms = 0;
  double server_ms = -1;  // CompileResult::server_ms; negative where there is none
};
// One call: fills in its own wall time, checks what it got.
using Probe = std::function<Status(Sample&)>;

Probe echo_probe(const Client& client, const std::string& payload) {
  return [&client, &payload](Sample& sample) -> Status {
    const auto start = Clock::now();
    Result<std::string> back = client.echo(payload);
    sample.ms = ms_since(start);
    if (!back) return in_context("echo", back.error());
    if (back->size() != payload.size()) return make_error(ErrorCode::internal, "echo returned another size");
    return Ok{};
  };
}

// A compile that must be answered by `tier` ("memory", "disk", "redis",
// "compiled") with `cubin` (when not empty): a row measures only what it
// says it measures.
Probe compile_probe(const Client& client, const CompileRequest& request, std::string tier, const std::string& cubin) {
  return [&client, &request, tier = std::move(tier), &cubin](Sample& sample) -> Status {
    const auto start = Clock::now();
    Result<CompileResult> result = client.compile(request);
    sample.ms = ms_since(start);
    if (!result) return in_context("compile of " + request.input_name, result.error());
    if (result->cache != tier)
      return make_error(ErrorCode::internal,
                        "expected '" + tier + "' for " + request.input_name + ", got '" + result->cache + "'");
    if (!cubin.empty() && result->artifact != cubin)
      return make_error(ErrorCode::internal, "a " + tier + " hit returned other bytes than the compile");
    sample.server_ms = result->server_ms;
    return Ok{};
  };
}

Probe local_probe(const LocalCache& cache, const std::string& key, const std::string& cubin) {
  return [&cache, &key, &cubin](Sample& sample) -> Status {
    const auto start = Clock::now();
    Result<std::optional<CompileResult>> result = cache.get(key);
    sample.ms = ms_since(start);
    if (!result) return in_context("LocalCache::get", result.error());
    if (!result->has_value()) return make_error(ErrorCode::internal, "LocalCache::get missed " + key);
    if ((*result)->artifact != cubin) return make_error(ErrorCode::internal, "LocalCache::get returned other bytes");
    return Ok{};
  };
}

struct LatencyRow {
  std::string what;
  std::string payload;
  std::vector<double> ms;
  std::vector<double> echo_ms;    // paired echoes; empty when not paired
  std::vector<double> server_ms;  // empty where the probe has none
  std::optional<double> target;   // p50 / echo p50 at most this
};

void keep(LatencyRow& row, const Sample& sample) {
  row.ms.push_back(sample.ms);
  if (sample.server_ms >= 0) row.server_ms.push_back(sample.server_ms);
}

// Runs `probe` reps times, each next to an echo of the same size, flipping
// which goes first every rep, so that load from other processes on the host
// (a build, on 2 cores) falls on both alike and each ratio is against an
// echo from the same minutes. One warm-up of each first: the first call on a
// fresh client also connects.
Status time_paired(const Probe& echo, const Probe& probe, int reps, LatencyRow& row) {
  Sample sample;
  if (Status s = echo(sample); !s) return s;
  if (Status s = probe(sample); !s) return s;
  for (int rep = 0; rep < reps; ++rep) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool echo_turn = (turn == 0) == (rep % 2 == 0);
      Sample one;
      if (Status s = echo_turn ? echo(one) : probe(one); !s) return s;
      if (echo_turn)
        row.echo_ms.push_back(one.ms);
      else
        keep(row, one);
    }
  }
  return Ok{};
}

// ---- throughput -------------------------------------------------------------

// Calls per second from `clients` threads, each with its own Client, each
// calling back to back for window_s. Only calls that completed inside the
// window count. With both sides on the same few cores the rate is bounded by
// the CPU one call costs, so that is measured too: the daemon's and this
// process's (the clients') CPU time over the window, per call.
using Call = std::function<Status(const Client&)>;

struct Rate {
  double per_second = 0;
  double daemon_cpu_us = 0;  // per call
  double client_cpu_us = 0;  // per call, this whole process
};

Result<Rate> calls_per_second(const Daemon& daemon, int clients, double window_s, const Call& call) {
  const std::string& socket_path = daemon.socket_path();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> completed{0};
  std::mutex error_mutex;
  std::optional<Error> first_error;
  std::latch ready(clients + 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      Client client(socket_path);
      Status status = call(client);  // also connects, before the window opens
      ready.arrive_and_wait();
      uint64_t mine = 0;
      while (status && !stop.load(std::memory_order_relaxed)) {
        status = call(client);
        if (status && !stop.load(std::memory_order_relaxed)) ++mine;
      }
      completed += mine;
      if (!status) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = status.error();
        stop = true;
      }
    });
  }
  ready.arrive_and_wait();
  const auto start = Clock::now();
  const double daemon_cpu = process_cpu_seconds(daemon.pid()), client_cpu = own_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  stop = true;
  const double seconds = ms_since(start) / 1000.0;
  const double daemon_used = process_cpu_seconds(daemon.pid()) - daemon_cpu,
               client_used = own_cpu_seconds() - client_cpu;
  for (std::thread& t : threads) t.join();
  if (first_error) return *first_error;
  const double calls = static_cast<double>(std::max<uint64_t>(completed.load(), 1));
  return Rate{calls / seconds, daemon_used / calls * 1e6, client_used / calls * 1e6};
}

// The same measure with the async load generator (async_load.h): `clients`
// channels with one call in flight each, driven by one thread, so the
// clients cost little and the daemon is what is measured.
using AsyncLoad = std::function<Result<AsyncLoadResult>(int clients, std::chrono::duration<double> window)>;

Result<Rate> async_calls_per_second(const Daemon& daemon, int clients, double window_s, const AsyncLoad& load) {
  const double daemon_cpu = process_cpu_seconds(daemon.pid()), client_cpu = own_cpu_seconds();
  Result<AsyncLoadResult> result = load(clients, std::chrono::duration<double>(window_s));
  if (!result) return result.error();
  // The CPU counts include one warm-up call per channel: 16 of ~10^4 calls.
  const double daemon_used = process_cpu_seconds(daemon.pid()) - daemon_cpu,
               client_used = own_cpu_seconds() - client_cpu;
  const double calls = static_cast<double>(std::max<uint64_t>(result->completed, 1));
  return Rate{calls / result->seconds, daemon_used / calls * 1e6, client_used / calls * 1e6};
}

// Hit and echo windows alternated `rounds` times, so a burst of noise from
// the host's neighbours lands on both; each keeps its median window.
struct PairedRates {
  Rate hits, echoes;
};
Result<PairedRates> median_rates(int rounds, const std::function<Result<Rate>()>& hits,
                                 const std::function<Result<Rate>()>& echoes) {
  std::vector<Rate> hit_rates, echo_rates;
  for (int r = 0; r < rounds; ++r) {
    Result<Rate> hit = hits();
    if (!hit) return in_context("memory-hit throughput", hit.error());
    Result<Rate> echo = echoes();
    if (!echo) return in_context("echo throughput", echo.error());
    hit_rates.push_back(*hit);
    echo_rates.push_back(*echo);
  }
  auto median_rate = [](std::vector<Rate>& rates) {
    std::sort(rates.begin(), rates.end(), [](const Rate& x, const Rate& y) { return x.per_second < y.per_second; });
    return rates[rates.size() / 2];
  };
  return PairedRates{median_rate(hit_rates), median_rate(echo_rates)};
}

// ---- one compile for 32 concurrent identical requests ------------------------

struct Stampede {
  std::map<std::string, int> answered_by;  // CompileResult::cache -> requests
  bool same_bytes = true;
  size_t cubin_bytes = 0;
  double wall_ms = 0;
  uint64_t compiles = 0, joined = 0;  // the daemon's counters, before -> after
};

Result<Stampede> stampede(const std::string& socket_path, const CompileRequest& request) {
  Client stats_client(socket_path);
  Result<CacheStats> before = stats_client.cache_stats();
  if (!before) return in_context("cache_stats", before.error());
  std::vector<std::optional<Result<CompileResult>>> results(k_stampede_clients);
  std::latch ready(k_stampede_clients + 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < k_stampede_clients; ++c) {
    threads.emplace_back([&, c] {
      Client client(socket_path);
      (void)client.health();  // connected before the start, so the requests arrive together
      ready.arrive_and_wait();
      results[c].emplace(client.compile(request));
    });
  }
  ready.arrive_and_wait();
  const auto start = Clock::now();
  for (std::thread& t : threads) t.join();
  Stampede out;
  out.wall_ms = ms_since(start);
  const std::string* first = nullptr;
  for (const auto& result : results) {
    if (!*result) return in_context("concurrent compile", result->error());
    const CompileResult& r = result->value();
    ++out.answered_by[r.cache];
    if (!first) first = &r.artifact;
    out.same_bytes = out.same_bytes && r.artifact == *first;
  }
  out.cubin_bytes = first ? first->size() : 0;
  Result<CacheStats> after = stats_client.cache_stats();
  if (!after) return in_context("cache_stats", after.error());
  out.compiles = after->compiles - before->compiles;
  out.joined = after->joined - before->joined;
  return out;
}

std::optional<CacheTierStats> tier_stats(const CacheStats& stats, std::string_view tier) {
  for (const CacheTierStats& t : stats.tiers)
    if (t.tier == tier) return t;
  return std::nullopt;
}

// ---- synthetic cache directories ----------------------------------------------

// Writes `entries` copies of `prototype` under distinct keys, the way a
// daemon publishes them (DiskStore::put: encode, temp file, rename) but
// without fsync: the figure wanted is the start time over the result, not
// how long a disk takes to fill.
Result<uint64_t> fill_disk_cache(const std::string& directory, int entries, CacheEntry prototype, char tag) {
  DiskStore::Options options;
  options.directory = directory;
  options.sync = false;
  options.scan_on_open = false;
  options.max_bytes = 1ull << 40;                    // nothing may be evicted while filling
  options.rescan_interval = std::chrono::hours(24);  // no rescans while filling
  Result<std::unique_ptr<DiskStore>> store = DiskStore::open(options);
  if (!store) return store.error();
  uint64_t entry_bytes = 0;  // the same for every key: keys are all 64 hex digits
  for (int i = 0; i < entries; ++i) {
    prototype.key = sha256_hex(std::string("kjit-bench-") + tag + std::to_string(i));
    prototype.artifact.key = prototype.key;
    if (Status s = (*store)->put(prototype); !s) return in_context("filling " + directory, s.error());
    if (i == 0) entry_bytes = encode_entry(prototype).size();
  }
  return entry_bytes * static_cast<uint64_t>(entries);
}

Result<CacheEntry> entry_on_disk(const std::string& directory, const std::string& key) {
  DiskStore::Options options;
  options.directory = directory;
  options.scan_on_open = false;
  Result<std::unique_ptr<DiskStore>> store = DiskStore::open(options);
  if (!store) return store.error();
  Result<std::optional<CacheEntry>> entry = (*store)->get(key);
  if (!entry) return entry.error();
  if (!entry->has_value()) return make_error(ErrorCode::not_found, "no entry " + key + " in " + directory);
  return std::move(**entry);
}

// ---- the run ------------------------------------------------------------------

struct RunState {
  Params params;
  std::string root;            // sockets and cache directories, removed at the end
  std::string startup_parent;  // where the directory of many entries is made
  std::string run_tag;
  std::vector<Payload> payloads;
  std::vector<LatencyRow> latency;
  std::optional<test::RedisServer> redis;
  std::string redis_address;
  std::vector<std::string> summary;  // target lines, printed last
};

void add_target(RunState& run, const std::string& what, const std::string& measured, bool met) {
  run.summary.push_back(what + ": " + measured + " -> " + (met ? "met" : "NOT met"));
}

std::vector<std::string> daemon_a_flags(const RunState& run) {
  std::vector<std::string> flags = {"--cache-dir", run.root + "/cache-a"};
  if (!run.redis_address.empty()) flags.insert(flags.end(), {"--redis", run.redis_address});
  return flags;
}

// Memory hits and cold compiles on daemon A, with throughput, the stampede
// and A's resident memory.
Status measure_daemon_a(RunState& run) {
  Result<std::unique_ptr<Daemon>> started = Daemon::start(run.root + "/a.sock", daemon_a_flags(run));
  if (!started) return in_context("starting kjitd A", started.error());
  Daemon& a = **started;
  const MemoryUse at_start = a.memory();
  std::printf("kjitd A: serving %.1f ms after spawn; RSS %s at start\n", a.startup_ms(),
              mib(at_start.rss_bytes).c_str());
  std::fflush(stdout);
  // Declared after the daemon, so destroyed before it: see Daemon::stop.
  Client client(a.socket_path());

  for (Payload& p : run.payloads) {
    const auto start = Clock::now();
    Result<CompileResult> compiled = client.compile(p.request);
    p.first_compile_ms = ms_since(start);
    if (!compiled) return in_context("first compile of " + p.label, compiled.error());
    if (compiled->cache != "compiled")
      return make_error(ErrorCode::internal, "first compile of " + p.label + " came from " + compiled->cache);
    p.key = compiled->key;
    p.cubin = compiled->artifact;
    std::printf("  %-8s kernel: %zu kernel(s), cubin %zu bytes (%s), first compile %.0f ms, key %.16s...\n",
                p.label.c_str(), compiled->kernels.size(), p.cubin.size(), kib(p.cubin.size()).c_str(),
                p.first_compile_ms, p.key.c_str());
    std::fflush(stdout);
  }
  const MemoryUse after_compile = a.memory();

  for (Payload& p : run.payloads) {
    LatencyRow echo{"echo (floor)", p.label, {}, {}, {}, std::nullopt};
    LatencyRow hit{"memory hit", p.label, {}, {}, {}, k_memory_hit_target};
    if (Status s = time_paired(echo_probe(client, p.cubin), compile_probe(client, p.request, "memory", p.cubin),
                               run.params.pairs, hit);
        !s)
      return s;
    echo.ms = hit.echo_ms;
    run.latency.push_back(std::move(echo));
    run.latency.push_back(std::move(hit));
  }

  // Cold compiles: each a new key; daemon A also takes a Redis lease and
  // writes the entry to disk and Redis, as a fleet member does.
  for (size_t i = 0; i < run.payloads.size(); ++i) {
    const Payload& p = run.payloads[i];
    LatencyRow cold{"cold compile", p.label, {}, {}, {}, std::nullopt};
    const int reps = i == 0 ? run.params.cold_small : run.params.cold_large;
    for (int rep = 0; rep < reps; ++rep) {
      CompileRequest request = variant_of(p, run.run_tag + " cold " + std::to_string(rep));
      Sample sample;
      if (Status s = compile_probe(client, request, "compiled", {})(sample); !s) return s;
      keep(cold, sample);
    }
    run.latency.push_back(std::move(cold));
  }

  std::printf(
      "\n== Throughput on kjitd A: calls/s, each client a thread with its own Client, median of %d windows of %.1f s "
      "==\n",
      run.params.rounds, run.params.window_s);
  std::fflush(stdout);
  TextTable throughput({"cubin", "clients", "memory hits/s", "echo/s", "hits/echo", "CPU us/hit", "CPU us/echo"});
  for (size_t i = 0; i < run.payloads.size(); ++i) {
    const Payload& p = run.payloads[i];
    const Call hit = [&p](const Client& c) -> Status {
      Result<CompileResult> r = c.compile(p.request);
      if (!r) return r.error();
      if (r->cache != "memory" || r->artifact.size() != p.cubin.size())
        return make_error(ErrorCode::internal, "a throughput call was not a memory hit");
      return Ok{};
    };
    const Call echo = [&p](const Client& c) -> Status {
      Result<std::string> r = c.echo(p.cubin);
      if (!r) return r.error();
      return Ok{};
    };
    for (int clients : k_throughput_clients) {
      Result<PairedRates> rates =
          median_rates(run.params.rounds, [&] { return calls_per_second(a, clients, run.params.window_s, hit); },
                       [&] { return calls_per_second(a, clients, run.params.window_s, echo); });
      if (!rates) return rates.error();
      const Rate* hits = &rates->hits;
      const Rate* echoes = &rates->echoes;
      auto cpu = [](const Rate& r) { return fixed(r.daemon_cpu_us, 0) + " + " + fixed(r.client_cpu_us, 0); };
      throughput.add_row({p.label, std::to_string(clients), fixed(hits->per_second, 0), fixed(echoes->per_second, 0),
                          fixed(hits->per_second / echoes->per_second), cpu(*hits), cpu(*echoes)});
      if (i == 0 && clients == 16)
        add_target(run, "memory hits/s with 16 blocking client threads, 8 KiB cubin (target >= 15000)",
                   fixed(hits->per_second, 0) + "/s (echo " + fixed(echoes->per_second, 0) + "/s)",
                   hits->per_second >= k_throughput_target);
    }
  }
  throughput.print();
  std::printf("(CPU us/call: kjitd + this process, i.e. server + clients, user + system, over the window)\n");

  std::printf(
      "\n== Throughput on kjitd A with an async load generator: one thread, one channel per client, one call in "
      "flight each, median of %d windows of %.1f s ==\n",
      run.params.rounds, run.params.window_s);
  std::fflush(stdout);
  TextTable async_throughput(
      {"cubin", "clients", "memory hits/s", "echo/s", "hits/echo", "CPU us/hit", "CPU us/echo"});
  for (size_t i = 0; i < run.payloads.size(); ++i) {
    const Payload& p = run.payloads[i];
    v1::CompileRequest wire;
    to_wire(p.request, wire);
    const AsyncLoad hits = [&](int clients, std::chrono::duration<double> window) {
      return async_compile_load(a.socket_path(), wire, clients, window, [&p](const v1::CompileResponse& r) -> Status {
        if (r.cache() != "memory" || r.artifact().size() != p.cubin.size())
          return make_error(ErrorCode::internal, "an async throughput call was not a memory hit");
        return Ok{};
      });
    };
    const AsyncLoad echoes = [&](int clients, std::chrono::duration<double> window) {
      return async_echo_load(a.socket_path(), p.cubin, clients, window);
    };
    for (int clients : k_throughput_clients) {
      Result<PairedRates> rates =
          median_rates(run.params.rounds, [&] { return async_calls_per_second(a, clients, run.params.window_s, hits); },
                       [&] { return async_calls_per_second(a, clients, run.params.window_s, echoes); });
      if (!rates) return in_context("async load", rates.error());
      const Rate* hit_rate = &rates->hits;
      const Rate* echo_rate = &rates->echoes;
      auto cpu = [](const Rate& r) { return fixed(r.daemon_cpu_us, 0) + " + " + fixed(r.client_cpu_us, 0); };
      async_throughput.add_row({p.label, std::to_string(clients), fixed(hit_rate->per_second, 0),
                                fixed(echo_rate->per_second, 0), fixed(hit_rate->per_second / echo_rate->per_second),
                                cpu(*hit_rate), cpu(*echo_rate)});
      if (i == 0 && clients == 16)
        add_target(run, "memory hits/s with 16 clients on an async load generator, 8 KiB cubin (target >= 15000)",
                   fixed(hit_rate->per_second, 0) + "/s (echo " + fixed(echo_rate->per_second, 0) + "/s)",
                   hit_rate->per_second >= k_throughput_target);
    }
  }
  async_throughput.print();
  std::printf(
      "(the blocking table above also charges 16 blocking client threads to the same 2 cores: ~1.8 context\n"
      " switches per call in the client process; this one measures what the daemon sustains)\n");

  const MemoryUse after_hits = a.memory();
  Result<CacheStats> stats = client.cache_stats();
  if (!stats) return in_context("cache_stats", stats.error());
  std::optional<CacheTierStats> memory_tier = tier_stats(*stats, "memory");

  std::printf("\n== Resident memory of kjitd A (memory tier budget %s, the default) ==\n",
              mib(k_default_memory_budget).c_str());
  TextTable rss({"when", "VmRSS", "VmHWM (peak)"});
  rss.add_row({"serving, before any request", mib(at_start.rss_bytes), mib(at_start.peak_bytes)});
  rss.add_row(
      {"after the first compiles (compilers loaded)", mib(after_compile.rss_bytes), mib(after_compile.peak_bytes)});
  rss.add_row({"after the memory-hit and throughput runs", mib(after_hits.rss_bytes), mib(after_hits.peak_bytes)});
  rss.print();
  if (memory_tier)
    std::printf("memory tier now holds %llu entries, %s (%.2f%% of its budget)\n",
                static_cast<unsigned long long>(memory_tier->entries), mib(memory_tier->bytes).c_str(),
                100.0 * static_cast<double>(memory_tier->bytes) / static_cast<double>(k_default_memory_budget));

  std::printf("\n== One compile per key: %d concurrent identical cold requests (256 KiB kernel) on kjitd A ==\n",
              k_stampede_clients);
  std::fflush(stdout);
  Result<Stampede> herd = stampede(a.socket_path(), variant_of(run.payloads.back(), run.run_tag + " stampede"));
  if (!herd) return herd.error();
  std::string answered;
  for (const auto& [source, count] : herd->answered_by)
    answered += (answered.empty() ? "" : ", ") + source + " " + std::to_string(count);
  TextTable once(
      {"requests", "compiles (daemon counter)", "joined (counter)", "answered by", "same bytes", "cubin", "wall ms"});
  once.add_row({std::to_string(k_stampede_clients), std::to_string(herd->compiles), std::to_string(herd->joined),
                answered, herd->same_bytes ? "yes" : "NO", std::to_string(herd->cubin_bytes), fixed(herd->wall_ms, 0)});
  once.print();
  add_target(run, "compiles for 32 concurrent identical cold requests (target 1)", std::to_string(herd->compiles),
             herd->compiles == 1 && herd->same_bytes);
  return Ok{};
}

// Redis hits on daemon B: another disk directory, no memory and no disk
// tier, so every request is answered by Redis.
Status measure_redis(RunState& run) {
  if (run.redis_address.empty()) return Ok{};
  Result<std::unique_ptr<Daemon>> started =
      Daemon::start(run.root + "/b.sock", {"--cache-dir", run.root + "/cache-b", "--no-disk-cache",
                                           "--memory-cache-bytes", "0", "--redis", run.redis_address});
  if (!started) return in_context("starting kjitd B", started.error());
  Client client((*started)->socket_path());
  for (const Payload& p : run.payloads) {
    LatencyRow hit{"redis hit (kjitd B)", p.label, {}, {}, {}, std::nullopt};
    if (Status s = time_paired(echo_probe(client, p.cubin), compile_probe(client, p.request, "redis", p.cubin),
                               run.params.tier_pairs, hit);
        !s)
      return s;
    run.latency.push_back(std::move(hit));
  }
  return Ok{};
}

// Disk hits: the first request per key after restarting A as it was, then
// A on the same directory with no memory tier, where every request is a
// disk hit; LocalCache next to it.
Status measure_disk(RunState& run) {
  std::vector<LatencyRow> first(run.payloads.size());
  for (size_t i = 0; i < run.payloads.size(); ++i)
    first[i] = {"disk hit, 1st after restart", run.payloads[i].label, {}, {}, {}, std::nullopt};
  for (int r = 0; r < run.params.restarts; ++r) {
    Result<std::unique_ptr<Daemon>> restarted = Daemon::start(run.root + "/a.sock", daemon_a_flags(run));
    if (!restarted) return in_context("restarting kjitd A", restarted.error());
    Client client((*restarted)->socket_path());
    if (Result<std::string> up = client.health(); !up) return up.error();  // connects outside the timing
    for (size_t i = 0; i < run.payloads.size(); ++i) {
      const Payload& p = run.payloads[i];
      Sample sample;
      if (Status s = compile_probe(client, p.request, "disk", p.cubin)(sample); !s) return s;
      keep(first[i], sample);
      if (Status s = echo_probe(client, p.cubin)(sample); !s) return s;
      first[i].echo_ms.push_back(sample.ms);
    }
  }
  for (LatencyRow& row : first) run.latency.push_back(std::move(row));

  std::vector<std::string> flags = daemon_a_flags(run);
  flags.insert(flags.end(), {"--memory-cache-bytes", "0"});
  Result<std::unique_ptr<Daemon>> started = Daemon::start(run.root + "/a.sock", flags);
  if (!started) return in_context("starting kjitd A without a memory tier", started.error());
  Client client((*started)->socket_path());
  Result<LocalCache> local = LocalCache::open(run.root + "/cache-a");
  if (!local) return in_context("LocalCache::open", local.error());
  for (const Payload& p : run.payloads) {
    LatencyRow disk{"disk hit (no memory tier)", p.label, {}, {}, {}, k_disk_hit_target};
    if (Status s = time_paired(echo_probe(client, p.cubin), compile_probe(client, p.request, "disk", p.cubin),
                               run.params.tier_pairs, disk);
        !s)
      return s;
    run.latency.push_back(std::move(disk));
    LatencyRow direct{"LocalCache::get (no RPC)", p.label, {}, {}, {}, k_local_target};
    if (Status s = time_paired(echo_probe(client, p.cubin), local_probe(*local, p.key, p.cubin), run.params.tier_pairs,
                               direct);
        !s)
      return s;
    run.latency.push_back(std::move(direct));
  }
  return Ok{};
}

void print_latency(RunState& run) {
  std::printf("\n== Latency over the unix socket (ms); p50/echo against the echo paired with each row ==\n");
  std::printf(
      "(echo: Diagnostics.Echo carrying the cubin both ways; server: CompileResult::server_ms, the daemon's\n"
      " handler from request to response built)\n");
  TextTable table({"what", "cubin", "n", "p50", "p99", "server p50", "echo p50", "p50/echo", "target", "verdict"});
  const std::vector<std::string> order = {"echo (floor)",
                                          "memory hit",
                                          "disk hit (no memory tier)",
                                          "disk hit, 1st after restart",
                                          "redis hit (kjitd B)",
                                          "LocalCache::get (no RPC)",
                                          "cold compile"};
  for (const Payload& p : run.payloads) {
    for (const std::string& what : order) {
      for (const LatencyRow& row : run.latency) {
        if (row.what != what || row.payload != p.label) continue;
        const double p50 = median(row.ms);
        const bool paired = !row.echo_ms.empty() && what != "echo (floor)";
        const double echo_p50 = paired ? median(row.echo_ms) : 0;
        const double ratio = paired ? p50 / echo_p50 : 0;
        std::string target = "-", verdict = "-";
        if (row.target && paired) {
          target = "<= " + fixed(*row.target, 1);
          const bool met = ratio <= *row.target;
          verdict = met ? "met" : "NOT met";
          add_target(run, what + " p50, " + p.label + " cubin (target <= " + fixed(*row.target, 1) + " x echo)",
                     fixed(p50, 3) + " ms = " + fixed(ratio) + " x echo " + fixed(echo_p50, 3) + " ms", met);
        }
        table.add_row({what, p.label, std::to_string(row.ms.size()), fixed(p50, 3), fixed(percentile(row.ms, 99), 3),
                       row.server_ms.empty() ? "-" : fixed(median(row.server_ms), 3), paired ? fixed(echo_p50, 3) : "-",
                       paired ? fixed(ratio) : "-", target, verdict});
      }
    }
  }
  table.print();
}

// Where a timed checksum goes, so the compiler cannot drop the computation.
volatile uint64_t checksum_sink = 0;

// The metadata inside an encoded entry, found by the layout
// cache_entry.h documents (key size: u32 at 12, metadata size: u64 at 16),
// so that its parse can be timed on its own.
std::string_view entry_metadata(std::string_view bytes) {
  auto load_le = [bytes](size_t offset, size_t width) {
    uint64_t value = 0;
    for (size_t i = 0; i < width; ++i) value |= uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
    return value;
  };
  if (bytes.size() < k_entry_header_bytes) return {};
  const uint64_t key_size = load_le(12, 4), metadata_size = load_le(16, 8);
  if (bytes.size() - k_entry_header_bytes < key_size + metadata_size) return {};
  return bytes.substr(k_entry_header_bytes + key_size, metadata_size);
}

// Where a disk or Redis hit and a LocalCache read spend their time, in
// process, on the entry files daemon A wrote; and what copying an Artifact
// costs, which the daemon's front end does on every hit.
Status print_breakdown(const RunState& run) {
  const std::string directory = run.root + "/cache-a";
  DiskStore::Options options;
  options.directory = directory;
  options.scan_on_open = false;
  Result<std::unique_ptr<DiskStore>> store = DiskStore::open(options);
  if (!store) return store.error();
  Result<LocalCache> local = LocalCache::open(directory);
  if (!local) return local.error();
  const int reps = run.params.tier_pairs;

  std::printf("\n== In process: the pieces of a disk hit and of LocalCache::get, median of %d (us) ==\n", reps);
  TextTable table({"cubin", "entry file", "metadata", "read file", "XXH3-128(entry)", "parse metadata", "decode_entry",
                   "copy Artifact", "DiskStore::get", "LocalCache::get"});
  for (const Payload& p : run.payloads) {
    const std::string path = (*store)->path_for(p.key);
    std::vector<double> read_us, checksum_us, metadata_us, decode_us, copy_us, store_us, local_us;
    size_t metadata_bytes = 0;
    std::string bytes;
    for (int rep = 0; rep < reps; ++rep) {
      auto start = Clock::now();
      {
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        if (fd < 0 || ::fstat(fd, &st) != 0) {
          if (fd >= 0) ::close(fd);
          return make_error(ErrorCode::internal, "cannot read " + path);
        }
        bytes.resize(static_cast<size_t>(st.st_size));
        size_t done = 0;
        while (done < bytes.size()) {
          ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
          if (n <= 0) break;
          done += static_cast<size_t>(n);
        }
        ::close(fd);
      }
      read_us.push_back(ms_since(start) * 1000);

      start = Clock::now();
      checksum_sink = XXH3_128bits(bytes.data(), bytes.size()).low64;  // kept: volatile
      checksum_us.push_back(ms_since(start) * 1000);

      const std::string_view metadata = entry_metadata(bytes);
      metadata_bytes = metadata.size();
      start = Clock::now();
      internal::ArtifactRecord parsed_metadata;
      const bool parsed = parsed_metadata.ParseFromArray(metadata.data(), static_cast<int>(metadata.size()));
      metadata_us.push_back(ms_since(start) * 1000);
      if (!parsed) return make_error(ErrorCode::internal, "the metadata of " + path + " does not parse");

      start = Clock::now();
      Result<CacheEntry> entry = decode_entry(bytes, p.key);
      decode_us.push_back(ms_since(start) * 1000);
      if (!entry) return in_context("decode_entry", entry.error());

      start = Clock::now();
      Artifact copy = entry->artifact;
      copy_us.push_back(ms_since(start) * 1000);
      if (copy.bytes.size() != p.cubin.size()) return make_error(ErrorCode::internal, "copy lost bytes");

      start = Clock::now();
      Result<std::optional<CacheEntry>> got = (*store)->get(p.key);
      store_us.push_back(ms_since(start) * 1000);
      if (!got || !got->has_value()) return make_error(ErrorCode::internal, "DiskStore::get missed");

      start = Clock::now();
      Result<std::optional<CompileResult>> read = local->get(p.key);
      local_us.push_back(ms_since(start) * 1000);
      if (!read || !read->has_value()) return make_error(ErrorCode::internal, "LocalCache::get missed");
    }
    table.add_row({p.label, std::to_string(bytes.size()) + " B", std::to_string(metadata_bytes) + " B",
                   fixed(median(read_us), 1), fixed(median(checksum_us), 1), fixed(median(metadata_us), 1),
                   fixed(median(decode_us), 1), fixed(median(copy_us), 1), fixed(median(store_us), 1),
                   fixed(median(local_us), 1)});
  }
  table.print();
  std::printf(
      "(decode_entry = checksum + parse metadata + the fields moved out of it + a copy of the payload;\n"
      " DiskStore::get = read file + decode_entry; LocalCache::get = DiskStore::get + moves. The daemon's\n"
      " front end copies the Artifact once per hit of any tier, CachedCompiler::compile)\n");
  return Ok{};
}

// Start time over a directory of many entries, against an empty one.
Status measure_startup(RunState& run) {
  const Payload& small = run.payloads.front();
  Result<CacheEntry> prototype = entry_on_disk(run.root + "/cache-a", small.key);
  if (!prototype) return in_context("reading the 8 KiB entry", prototype.error());
  prototype->artifact.bytes.resize(k_startup_payload_bytes);  // never read at start; keeps the fill short

  Result<ScratchDir> scratch = ScratchDir::create(run.startup_parent);
  if (!scratch) return scratch.error();
  const std::string full = scratch->path() + "/cache-many";
  std::printf("\n== kjitd start, spawn -> health SERVING (ms), with %d entries on disk ==\n",
              run.params.startup_entries);
  std::fflush(stdout);
  const auto fill_start = Clock::now();
  Result<uint64_t> bytes = fill_disk_cache(full, run.params.startup_entries, *prototype, 's');
  if (!bytes) return bytes.error();
  struct statfs fs {};
  const bool tmpfs = ::statfs(full.c_str(), &fs) == 0 && fs.f_type == k_tmpfs_magic;
  std::printf("filled %s (%s): %d entries, %s of entry bytes, in %.1f s (DiskStore::put without fsync)\n", full.c_str(),
              tmpfs ? "tmpfs" : "not tmpfs", run.params.startup_entries, mib(*bytes).c_str(),
              ms_since(fill_start) / 1000);

  std::vector<double> empty_ms, full_ms;
  uint64_t entries_seen = 0;
  for (int r = 0; r < run.params.startup_runs; ++r) {
    Result<std::unique_ptr<Daemon>> empty =
        Daemon::start(run.root + "/s.sock", {"--cache-dir", run.root + "/cache-empty-" + std::to_string(r)});
    if (!empty) return in_context("starting kjitd on an empty directory", empty.error());
    empty_ms.push_back((*empty)->startup_ms());
    (*empty)->stop();
    Result<std::unique_ptr<Daemon>> many = Daemon::start(run.root + "/s.sock", {"--cache-dir", full});
    if (!many) return in_context("starting kjitd on " + full, many.error());
    full_ms.push_back((*many)->startup_ms());
    Result<CacheStats> stats = Client((*many)->socket_path()).cache_stats();
    if (stats)
      if (std::optional<CacheTierStats> disk = tier_stats(*stats, "disk")) entries_seen = disk->entries;
    (*many)->stop();
  }
  TextTable table({"cache directory", "starts", "median", "max", "target", "verdict"});
  table.add_row({"empty", std::to_string(empty_ms.size()), fixed(median(empty_ms), 1),
                 fixed(percentile(empty_ms, 100), 1), "-", "-"});
  const bool met = percentile(full_ms, 100) < k_startup_target_ms;
  table.add_row({std::to_string(run.params.startup_entries) + " entries", std::to_string(full_ms.size()),
                 fixed(median(full_ms), 1), fixed(percentile(full_ms, 100), 1), "< 1000", met ? "met" : "NOT met"});
  table.print();
  std::printf(
      "the daemon's disk tier reported %llu entries after its start-up scan (the directory was just written,\n"
      " so its inodes are in memory, as for a cache in recent use; a cold start after a reboot is not measured)\n",
      static_cast<unsigned long long>(entries_seen));
  add_target(run, "kjitd start with " + std::to_string(run.params.startup_entries) + " entries on disk (target < 1 s)",
             "max " + fixed(percentile(full_ms, 100), 1) + " ms over " + std::to_string(full_ms.size()) + " start(s)",
             met);
  std::printf("removing the %d entries took %.1f s\n", run.params.startup_entries, scratch->remove());
  return Ok{};
}

// Whether resident memory stays within the memory tier's budget plus a fixed
// overhead. 256 KiB entries, more than the budget holds, are named by key
// (PlanLaunch), which reads each from disk into the memory tier without
// compiling, pass after pass. The same traffic against a daemon with no
// memory tier gives the overhead that is not the tier (gRPC and allocator
// buffers), so the bound checked is: growth <= that growth + budget, and
// the last pass adds (next to) nothing.
Status measure_memory_bound(RunState& run) {
  const Payload& large = run.payloads.back();
  Result<CacheEntry> prototype = entry_on_disk(run.root + "/cache-a", large.key);
  if (!prototype) return in_context("reading the 256 KiB entry", prototype.error());
  const std::string directory = run.root + "/cache-bound";
  Result<uint64_t> bytes = fill_disk_cache(directory, run.params.bound_entries, *prototype, 'b');
  if (!bytes) return bytes.error();

  constexpr int k_passes = 3;
  std::printf(
      "\n== Resident memory against the memory tier's bound: %d entries of %s (%s) named by key, %d passes ==\n",
      run.params.bound_entries, kib(large.cubin.size()).c_str(), mib(*bytes).c_str(), k_passes);
  std::fflush(stdout);
  TextTable table({"memory tier", "VmRSS serving", "pass 1", "pass 2", "pass 3", "growth", "last pass", "tier bytes",
                   "tier entries", "evictions"});
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {32, 1, 1};
  uint64_t growth_without_tier = 0;
  for (uint64_t budget : {uint64_t{0}, k_bound_budget_bytes}) {
    Result<std::unique_ptr<Daemon>> started =
        Daemon::start(run.root + "/m.sock", {"--cache-dir", directory, "--memory-cache-bytes", std::to_string(budget)});
    if (!started) return in_context("starting kjitd M", started.error());
    Daemon& m = **started;
    Client client(m.socket_path());
    const MemoryUse at_start = m.memory();
    std::vector<std::string> row = {budget ? mib(budget) : "off (0)", mib(at_start.rss_bytes)};
    uint64_t previous = at_start.rss_bytes, last_pass = 0, rss = at_start.rss_bytes;
    for (int pass = 1; pass <= k_passes; ++pass) {
      for (int i = 0; i < run.params.bound_entries; ++i) {
        KernelRef kernel;
        kernel.key = sha256_hex(std::string("kjit-bench-b") + std::to_string(i));
        kernel.kernel = "payload_0";
        Result<PlannedLaunch> plan = client.plan_launch(kernel, config);
        if (!plan) return in_context("PlanLaunch by key", plan.error());
      }
      rss = m.memory().rss_bytes;
      last_pass = rss > previous ? rss - previous : 0;
      previous = rss;
      row.push_back(mib(rss));
    }
    const uint64_t growth = rss > at_start.rss_bytes ? rss - at_start.rss_bytes : 0;
    Result<CacheStats> stats = client.cache_stats();
    if (!stats) return in_context("cache_stats", stats.error());
    std::optional<CacheTierStats> tier = tier_stats(*stats, "memory");
    row.insert(row.end(), {mib(growth), mib(last_pass), tier ? mib(tier->bytes) : "-",
                           tier ? std::to_string(tier->entries) : "-", tier ? std::to_string(tier->evictions) : "-"});
    table.add_row(std::move(row));
    if (budget == 0) {
      growth_without_tier = growth;
      continue;
    }
    // A last pass that adds less than one entry's worth means RSS has levelled off.
    const bool met = growth <= growth_without_tier + budget && last_pass < large.cubin.size();
    add_target(run, "resident memory bounded by the tier's budget + overhead (" + mib(budget) + " tier, over-full)",
               "grew " + mib(growth) + " vs " + mib(growth_without_tier) + " without a tier + " + mib(budget) +
                   " budget; last pass +" + mib(last_pass),
               met);
  }
  table.print();
  std::printf("(growth: VmRSS after the last pass - VmRSS serving; last pass: what the last pass added)\n");
  return Ok{};
}

Status run_bench(const Params& params, bool quick, const std::string& startup_parent) {
  const auto bench_start = Clock::now();
  RunState run;
  run.params = params;
  Result<ScratchDir> root = ScratchDir::create(std::filesystem::temp_directory_path().string());
  if (!root) return root.error();
  run.root = root->path();
  run.startup_parent = startup_parent;
  run.run_tag = "run " + std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr));

  std::printf("kjit_bench_cache: compile-cache hits through kjitd, tier by tier, against the Echo floor%s\n",
              quick ? " (--quick)" : "");
  std::printf("host CPUs: %ld; kjitd: %s; toolkit %s; target cuda:90\n", ::sysconf(_SC_NPROCESSORS_ONLN),
              test::kjitd_path().c_str(), test::cuda_home().c_str());

  // Before any gRPC thread exists in this process: RedisServer forks.
  if (test::RedisServer::installed()) {
    run.redis.emplace();
    if (!run.redis->start()) return make_error(ErrorCode::unavailable, "redis-server did not start");
    run.redis_address = "127.0.0.1:" + std::to_string(run.redis->port());
    std::printf("redis-server: %s (started for this run, no persistence)\n", run.redis_address.c_str());
  } else {
    std::printf("redis-server: not installed at %s; the Redis rows are skipped\n", test::RedisServer::k_binary);
  }
  std::printf("kjitd A: --cache-dir <tmp>/cache-a%s, memory tier 256 MiB (default)\n",
              run.redis_address.empty() ? "" : " --redis <that>");
  std::fflush(stdout);

  for (const PayloadSpec& spec : k_payload_specs) {
    Payload p;
    p.label = spec.label;
    p.source = payload_source(spec.kernels, spec.unroll);
    p.request.input_kind = InputKind::cuda_source;
    p.request.input = p.source + "// " + run.run_tag + "\n";
    p.request.input_name =
        std::string("payload_") + std::to_string(spec.kernels) + "x" + std::to_string(spec.unroll) + ".cu";
    p.request.target = "cuda:90";
    run.payloads.push_back(std::move(p));
  }

  // Timed part by part, so that a run over its budget shows where it went.
  const std::pair<const char*, std::function<Status()>> parts[] = {
      {"kjitd A", [&] { return measure_daemon_a(run); }},
      {"redis", [&] { return measure_redis(run); }},
      {"disk", [&] { return measure_disk(run); }},
      {"latency table",
       [&] {
         print_latency(run);
         return Status(Ok{});
       }},
      {"in process", [&] { return print_breakdown(run); }},
      {"start", [&] { return measure_startup(run); }},
      {"memory bound", [&] { return measure_memory_bound(run); }},
  };
  std::string part_times;
  for (const auto& [name, measure] : parts) {
    const auto start = Clock::now();
    if (Status s = measure(); !s) return s;
    part_times += std::string(part_times.empty() ? "" : ", ") + name + " " + fixed(ms_since(start) / 1000, 1) + " s";
  }
  part_times += ", removing the temporary directory " + fixed(root->remove(), 1) + " s";

  std::printf(
      "\nkjitd processes: %d stopped, %d of them still in gRPC's teardown %.0f s after their socket was\n"
      "removed and killed (see Daemon::stop)\n",
      Daemon::stopped.load(), Daemon::killed_after_shutdown.load(),
      std::chrono::duration<double>(k_exit_grace).count());
  std::printf("\n== Targets ==\n");
  for (const std::string& line : run.summary) std::printf("  %s\n", line.c_str());
  std::printf("\nbench took %.1f s (%s)\n", ms_since(bench_start) / 1000, part_times.c_str());
  return Ok{};
}

}  // namespace
}  // namespace kjit::bench

int main(int argc, char** argv) {
  bool quick = false;
  // tmpfs by default: on a disk mounted with discard (this project's VMs),
  // removing 100k entries afterwards takes minutes; the start-up scan itself
  // stats inodes that are in memory either way, having just been written.
  std::string startup_parent =
      ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : std::filesystem::temp_directory_path().string();
  CLI::App app{
      "Starts kjitd (and redis-server when installed) on temporary sockets and directories and prints the "
      "compile cache's latency, throughput, start time and memory tables."};
  app.add_flag("--quick", quick, "a short smoke run: fewer samples, 10k entries for the start time");
  app.add_option("--startup-dir", startup_parent,
                 "where the directory of many entries for the start time is made (default: /dev/shm when "
                 "writable, else the temp directory)")
      ->check(CLI::ExistingDirectory);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // Debian's abseil is built with assertions on, so every absl::Mutex in
  // gRPC also keeps a deadlock-detection graph; kjitd turns that off, and so
  // does this client process (a client application's choice, see README).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Piped into `head`, the bench must still reach its cleanup: killed by
  // SIGPIPE it would leave redis-server and kjitd running.
  std::signal(SIGPIPE, SIG_IGN);
  return kjit::bench::exit_code_of(
      "kjit_bench_cache",
      kjit::bench::run_bench(quick ? kjit::bench::k_quick_run : kjit::bench::k_full_run, quick, startup_parent));
}
