// The compiler behind the cache, which every RPC that needs a compiled
// kernel goes through: a validated CompileJob in; its plan (remembered for
// recent jobs), the cache's answer, or one compile per key (in a worker
// process or here); an Artifact out, with where it came from.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/artifact.h"
#include "core/compile_job.h"
#include "server/daemon_cache.h"
#include "server/compile_workers.h"
#include "server/plan_memo.h"
#include "server/daemon_config.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

struct CompileOutcome {
  // Shared with the cache (never copied on a hit); its own timings are those
  // of the compile that filled the cache.
  std::shared_ptr<const Artifact> artifact;
  CacheSource source = CacheSource::compiled;
  // What ran for this request: the compile's stages, or the lookup on a hit.
  std::vector<StageTiming> timings;
};

class CachedCompiler {
 public:
  // cache may be null: every request compiles. workers may be null:
  // compiles run in this process.
  CachedCompiler(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline,
                  std::shared_ptr<DaemonCache> cache, std::shared_ptr<CompileWorkers> workers = nullptr);

  using Clock = std::chrono::steady_clock;

  // The cache first (its key derived from the job and the effective
  // pipeline), then one compile per key shared by every waiter.
  Result<CompileOutcome> compile(const CompileJob& job) const;

  // The same in steps, for a caller that answers memory hits where it
  // stands and hands everything else (disk, Redis, compiles: work that
  // blocks) to other threads. `received` is when the request arrived: a
  // hit's timing is the lookup as the client waited for it.
  // Remembered for recent jobs (plan_memo.h), so a hit derives no key.
  Result<PlanMemo::PlanPtr> plan(const CompileJob& job) const;
  // Never blocks on I/O; nullopt on a miss (counted by compile() after it).
  std::optional<CompileOutcome> memory_hit(const CompilePlan& plan, Clock::time_point received) const;
  Result<CompileOutcome> compile(const CompileJob& job, const CompilePlan& plan,
                                 Clock::time_point received) const;

  const DaemonConfig& config() const { return config_; }
  const CompilePipeline& pipeline() const { return *pipeline_; }
  DaemonCache* cache() const { return cache_.get(); }

 private:
  DaemonConfig config_;
  std::shared_ptr<const CompilePipeline> pipeline_;
  std::shared_ptr<DaemonCache> cache_;
  std::shared_ptr<CompileWorkers> workers_;
  std::unique_ptr<PlanMemo> plan_memo_;  // null when a plugin hooks the key

  Result<Artifact> run(const CompileJob& job, const CompilePlan& plan) const;
};

}  // namespace kjit
