// The daemon's side of compiling in worker processes: a pool of kjitd
// processes started with --worker-fd, each confined to what compiling needs
// and running one compile at a time within its resource bounds. A worker
// that crashes (LLVM's aborts, a plugin's segfault), crosses a bound or
// outlives the compile time bound is reaped and replaced; the request gets a
// clear error with the worker's last words, and the daemon goes on.
//
// Workers come in classes (worker_class.h): a job runs only in a worker of
// its own class. General workers (every input but Tile IR) may run no
// program; Tile IR workers may run tileiras and its ptxas, and are started
// only when a Tile IR job comes, at most half the pool (at least one).
// Background compiles (fleet builds) run in workers of their own at the
// lowest CPU priority. Every class counts against the same max_workers.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/artifact.h"
#include "core/compile_job.h"
#include "pipeline/compile_pipeline.h"
#include "server/config/daemon_config.h"
#include "server/workers/worker_class.h"
#include "server/workers/worker_launch.h"
#include "server/workers/worker_output.h"

namespace kjit::worker {
class PchCounts;
}

namespace kjit {

// What the pool has done since it was made, for metrics. Every worker that
// ended other than by the pool's own close is either crashed or a kill.
struct WorkerCounters {
  uint64_t started = 0;  // processes spawned
  uint64_t crashed = 0;  // died by a signal not ours, or exited unasked
  // Workers killed by the pool, by cause: "timeout" (limits.compile_timeout_s),
  // "bound" (a resource bound crossed), "cancelled" (every request waiting on
  // the compile went away), "shutdown" (stop()).
  std::map<std::string, uint64_t> kills;
  uint64_t live = 0;  // idle and busy now
  // The live workers by class (WorkerClass::name): classes with workers only.
  std::map<std::string, uint64_t> live_by_class;
  // The workers' automatic precompiled headers (nvrtc_pch.h), as their
  // answers reported them: compiles that used one, PCH files written,
  // compiles that did without one they wanted, files evicted, and compiles
  // of a header set new to their worker (which write its PCH).
  uint64_t pch_hits = 0, pch_creations = 0, pch_fallbacks = 0, pch_evictions = 0, pch_firsts = 0;
  // The PCH files the live workers keep now, together (each worker's within
  // pch_bytes); a worker's go with it.
  uint64_t pch_bytes = 0;
  // Compiles a bound of their job's own process stopped while the worker
  // lived on (a Triton job's child), by bound: "cpu", "memory", "time".
  std::map<std::string, uint64_t> job_bounds;
};

// Who waits for a compile: a client, or nobody (a fleet build), whose
// compile runs in a background worker at the lowest CPU priority.
enum class CompilePriority { client, background };

class CompileWorkers {
 public:
  struct Options {
    WorkerLaunch launch;
    size_t max_workers = 2;                      // workers live, of every class; more compiles wait for one
    std::chrono::milliseconds timeout{300'000};  // a compile longer than this is stopped
    // The bounds each worker applies to itself (it reads them from the same
    // configuration); here to name the bound a dead worker crossed.
    CompileBounds bounds;
  };
  // `executable` is the workers' program; empty: this process's own
  // (kjitd). Tests that run the pool outside kjitd name kjitd.
  explicit CompileWorkers(Options options, std::string executable = {});
  // Closes every worker's socket (they exit on it) and reaps them.
  ~CompileWorkers();
  CompileWorkers(const CompileWorkers&) = delete;
  CompileWorkers& operator=(const CompileWorkers&) = delete;

  // Runs the planned job in a worker. The artifact's key is checked against
  // plan.key: a worker that derived another one runs another configuration.
  // `caller_namespace` is the caller's compile cache namespace (empty: the
  // default one): the worker keeps PCHs of the request's own headers per
  // namespace, and the pool's affinity follows (header_set.h); it never
  // changes the artifact. `abandoned` says that every request waiting on this compile went away
  // (cancelled, or past its deadline); it is polled while the compile waits
  // for a worker and while it runs, and when it turns true the worker is
  // killed (and replaced as usual) and the answer is ErrorCode::cancelled.
  // The job runs in a worker of its class (worker_class_for): when none is
  // idle and max_workers live, an idle worker of another class is ended to
  // make room; a compile waits only while every worker is busy (or, for a
  // Tile IR job, while the Tile IR workers' bound is reached and all busy).
  Result<Artifact> run(const CompileJob& job, const CompilePlan& plan, std::string_view caller_namespace,
                       const std::function<bool()>& abandoned = {}, CompilePriority priority = CompilePriority::client);

  size_t live_workers() const;
  // Started and waiting for a compile; running one (or starting for one).
  size_t ready_workers() const;
  size_t busy_workers() const;
  // The live workers by class (WorkerClass::name): classes with workers only.
  std::map<std::string, uint64_t> live_by_class() const;
  // Everything, the PCH files' bytes too (read from the workers' directories).
  WorkerCounters counters() const;

  // How the most recently started general worker for clients said it is
  // confined (that of the latest worker of any class before one started),
  // and how long it took to get ready; empty before the first worker.
  struct StartReport {
    std::string confinement;
    std::chrono::microseconds start_time{0};
    uint64_t started = 0;  // workers started so far
  };
  StartReport last_start() const;

  // Kills the workers of compiles in flight (they answer UNAVAILABLE) and
  // refuses new ones: a shutting-down daemon does not wait out a compile.
  void stop();

  // From now on the pool keeps max_workers workers started and ready (general
  // ones for clients; a worker of another class takes one's place), on a
  // thread of its own: at once, and again whenever one ends (a crash, a
  // bound, a kill), so a compile finds a ready worker instead of waiting
  // for one to start and confine itself. A worker that fails to start stops
  // this until a compile's own start succeeds (that compile reports why).
  void keep_ready();

  // Starts one Triton worker for clients, on a thread of its own, once the
  // Triton builds are known (asking for them runs the discovery), with the
  // default build's interpreter started in it, and those of `also_warm`
  // (build names as `kjit toolkits` lists them; "*": every build found): the
  // first request for each then finds Triton imported. Nothing when there is
  // no build or a Triton worker is live already; a name no build has is
  // logged; a failed start is logged, and compiles start their own.
  void prestart_triton(std::vector<std::string> also_warm = {});

  // The toolkits the daemon discovered, given to every worker in its setup
  // (launch.toolkits_from_daemon): workers started before this is called,
  // which keep_ready may start while the daemon is still discovering, wait
  // for it in their start.
  void hand_toolkits(std::vector<ToolkitHome> toolkits);

 private:
  struct Worker {
    WorkerClass worker_class;
    pid_t pid = -1;
    int fd = -1;                           // the daemon's end of the socketpair
    std::shared_ptr<WorkerOutput> output;  // its stderr
    std::string private_dir;               // its only writable directory, removed with it
    std::chrono::steady_clock::time_point started;
    // The header sets (affinity_key) of its latest CUDA C++ compiles, most
    // recent last: its precompiled headers are of these.
    std::vector<std::string> header_sets;
    // A Triton worker's builds whose interpreters it starts before Ready.
    std::vector<std::string> triton_warm_builds;
  };
  // A ready worker of `wanted`'s class, started if none is ready and the
  // class may have one more (fewer than max_workers live, or an idle worker
  // of another class to end). Among ready workers, one that compiled
  // `header_set` lately (empty: none wanted), else the one ready longest, so
  // that header sets spread over the workers; a compile never waits while
  // one of its class is ready. `warm_builds` are prestart_triton's: the
  // Triton worker started for it warms those builds before it is ready.
  Result<Worker> acquire(const WorkerClass& wanted, const std::function<bool()>& abandoned,
                         const std::string& header_set, const std::vector<std::string>& warm_builds = {});
  // Under mutex_: whether a worker of `wanted`'s class may start besides
  // those live (the pool's bound and the Tile IR workers' bound); the idle
  // worker of another class to end for one (the one idle longest), else
  // idle_.end().
  bool may_start(const WorkerClass& wanted) const;
  std::vector<Worker>::iterator idle_to_retire(const WorkerClass& wanted);
  size_t max_tileir_workers() const;
  size_t tileir_live() const;  // under mutex_
  size_t live() const;         // under mutex_: every class
  std::map<std::string, uint64_t> live_by_class_locked() const;  // under mutex_
  void release(Worker worker);
  // How a worker process ended: killed by a signal (a crash, or our kill),
  // or exited on its own (a failed start-up).
  struct WorkerEnd {
    bool signaled = false;
    std::string how;                   // "killed by signal 6 (Aborted)", "exited with status 2"
    std::optional<std::string> bound;  // the resource bound it crossed, if that is why it ended
    std::string last_output;           // its last lines on stderr during this job
  };
  // Kills (when asked) and reaps a worker, reads the rest of its output and
  // removes its private directory.
  WorkerEnd end_of(const Worker& worker, bool kill_first) const;
  // end_of, and the worker no longer counts.
  WorkerEnd discard(Worker worker, bool kill_first);
  // Why a discarded worker ended: "crashed", or a kill's cause (WorkerCounters).
  void count_end(const std::string& cause);
  // Starts the process (under mutex_) and counts it live; await_ready then
  // sends its setup and waits for its Ready, and discards it when it does
  // not come.
  Result<Worker> spawn(const WorkerClass& worker_class);
  Status await_ready(Worker& worker);
  bool stopping() const;
  // keep_ready's thread: starts workers while fewer than max_workers live.
  void warm();
  void add_pch_counts(const worker::PchCounts& pch);

  Options options_;
  std::string executable_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<Worker> idle_;
  // Idle and busy workers, by WorkerClass::index; live() is their sum.
  std::array<size_t, k_worker_class_count> live_by_class_{};
  std::vector<pid_t> busy_;
  std::set<std::string> private_dirs_;                       // of every live worker, for pch_bytes
  std::optional<std::vector<ToolkitHome>> handed_toolkits_;  // hand_toolkits
  std::condition_variable toolkits_handed_;
  bool stopping_ = false;
  StartReport last_start_;         // of any class
  StartReport last_client_start_;  // of the general class for clients
  WorkerCounters counters_;        // live is live()
  // keep_ready: whether it was asked, whether a start failed since, the thread.
  bool keep_ready_ = false;
  bool warm_failed_ = false;
  size_t starting_ = 0;  // workers keep_ready is starting (in live() and busy_)
  bool triton_prestarting_ = false;  // prestart_triton's worker is starting (in busy_)
  std::condition_variable warm_wanted_;
  std::thread warmer_;
  std::thread triton_prestarter_;  // prestart_triton
};

}  // namespace kjit
