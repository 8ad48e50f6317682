// The compiler behind the cache, which every RPC that needs a compiled
// kernel goes through: a validated CompileJob in; its plan (remembered for
// recent jobs), the cache's answer, or one compile per key (in a worker
// process or here); an Artifact out, with where it came from.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <memory>
#include <optional>
#include <string>

#include "core/artifact.h"
#include "core/compile_job.h"
#include "server/compile/daemon_cache.h"
#include "server/compile/compile_admission.h"
#include "server/workers/compile_workers.h"
#include "server/compile/fleet_builds.h"
#include "server/compile/plan_memo.h"
#include "server/compile/recipe_book.h"
#include "server/compile/warmup_seal.h"
#include "server/access/tenants.h"
#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

// Who asks for a compile, as the cache and the compile queue see it.
struct CompileScope {
  std::string_view ns;      // cache namespace; empty: the default one
  // The queue's name for the caller (its fair share and bound).
  std::string_view tenant = k_operator_label;
  // Whether this request's client went away (or its deadline passed); a
  // compile nobody waits for any more is stopped. Empty: never.
  std::function<bool()> gone;
  // A fleet build (fleet_builds.h): part of warming, so a seal neither
  // counts nor refuses it, and it queues no fleet builds of its own.
  bool fleet = false;
};

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
  // admission may be null: compiles are neither bounded nor queued fairly.
  CachedCompiler(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline,
                  std::shared_ptr<DaemonCache> cache, std::shared_ptr<CompileWorkers> workers = nullptr,
                  std::shared_ptr<CompileAdmission> admission = nullptr);

  using Clock = std::chrono::steady_clock;

  // The cache first (its key derived from the job and the effective
  // pipeline), then one compile per key shared by every waiter.
  Result<CompileOutcome> compile(const CompileJob& job, const CompileScope& scope = {}) const;

  // The same in steps, for a caller that answers memory hits where it
  // stands and hands everything else (disk, Redis, compiles: work that
  // blocks) to other threads. `received` is when the request arrived: a
  // hit's timing is the lookup as the client waited for it.
  // Remembered for recent jobs (plan_memo.h), so a hit derives no key.
  Result<PlanMemo::PlanPtr> plan(const CompileJob& job) const;
  // Never blocks on I/O; nullopt on a miss (counted by compile() after it).
  std::optional<CompileOutcome> memory_hit(const CompilePlan& plan, Clock::time_point received,
                                           std::string_view ns = {}) const;
  Result<CompileOutcome> compile(const CompileJob& job, const CompilePlan& plan, Clock::time_point received,
                                 const CompileScope& scope = {}) const;

  const DaemonConfig& config() const { return config_; }
  const CompilePipeline& pipeline() const { return *pipeline_; }
  DaemonCache* cache() const { return cache_.get(); }
  CompileAdmission* admission() const { return admission_.get(); }
  // The requests compiled here, without their targets; null without a cache.
  RecipeBook* recipes() const { return recipes_.get(); }
  WarmupSeal& seal() const { return *seal_; }
  // The background builds for the fleet's other targets; null without
  // [fleet] targets or a cache.
  const FleetBuilds* fleet() const { return fleet_.get(); }
  // The worker pool; null when compiles run in the daemon's process.
  const CompileWorkers* workers() const { return workers_.get(); }

 private:
  DaemonConfig config_;
  std::shared_ptr<const CompilePipeline> pipeline_;
  std::shared_ptr<DaemonCache> cache_;
  std::shared_ptr<CompileWorkers> workers_;
  std::unique_ptr<PlanMemo> plan_memo_;  // null when a plugin hooks the key
  std::shared_ptr<CompileAdmission> admission_;
  std::unique_ptr<RecipeBook> recipes_;
  std::unique_ptr<WarmupSeal> seal_;

  // The requests waiting on each stored key's compile (their `gone`; null
  // for a caller that never goes away): a compile all of them left is
  // abandoned.
  mutable std::mutex interest_mutex_;
  mutable std::unordered_multimap<std::string, const std::function<bool()>*> interest_;
  bool abandoned(const std::string& stored_key) const;

  // A miss after warm-up: counted and logged with its recipe; an error
  // naming the seal where the seal refuses it.
  Status after_warmup(const CompileJob& job, const CompilePlan& plan, const CompileScope& scope) const;
  // Admitted (bounded, fair), then run in a worker or here.
  Result<Artifact> run(const CompileJob& job, const CompilePlan& plan, const CompileScope& scope,
                       const std::function<bool()>& abandoned) const;

  // Last: destroyed first, so no build runs into the members above.
  std::unique_ptr<FleetBuilds> fleet_;
};

}  // namespace kjit
