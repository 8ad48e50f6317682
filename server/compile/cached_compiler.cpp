#include "server/compile/cached_compiler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kjit {
namespace {

// What the remembered jobs may hold: inputs are 16 MiB at most, typical
// sources tens of KiB.
constexpr uint64_t k_plan_memo_bytes = 64ull << 20;

// A hit answers with what the compile that filled the cache produced (the
// entry's key components are the ones its key was derived from, so the same
// as this request's), but what ran for this request was a lookup, not that
// compile's stages.
CompileOutcome hit_outcome(std::shared_ptr<const CacheEntry> entry, CacheSource source,
                           CachedCompiler::Clock::time_point received) {
  const double ms = std::chrono::duration<double, std::milli>(CachedCompiler::Clock::now() - received).count();
  std::vector<StageTiming> timings = {{"cache", ms, {{"lookup-" + std::string(to_string(source)), ms}}}};
  return CompileOutcome{shared_artifact(std::move(entry)), source, std::move(timings)};
}

// What ran for a request that compiled, or joined a compile, is that
// compile's stages.
CompileOutcome compiled_outcome(std::shared_ptr<const Artifact> artifact, CacheSource source = CacheSource::compiled) {
  std::vector<StageTiming> timings = artifact->timings;
  return CompileOutcome{std::move(artifact), source, std::move(timings)};
}

}  // namespace

CachedCompiler::CachedCompiler(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline,
                                 std::shared_ptr<DaemonCache> cache, std::shared_ptr<CompileWorkers> workers,
                                 std::shared_ptr<CompileAdmission> admission)
    : config_(std::move(config)),
      pipeline_(std::move(pipeline)),
      cache_(std::move(cache)),
      workers_(std::move(workers)),
      admission_(std::move(admission)) {
  const bool key_hooked = std::any_of(pipeline_->plugins().begin(), pipeline_->plugins().end(),
                                      [](const LoadedPlugin& plugin) { return static_cast<bool>(plugin.key_hook); });
  if (!key_hooked) plan_memo_ = std::make_unique<PlanMemo>(k_plan_memo_bytes);
  if (cache_)
    recipes_ = std::make_unique<RecipeBook>(
        cache_, RecipeLimits{config_.cache.max_recipes, config_.cache.max_recipe_bytes});
  // The configuration's value was checked against its choices when read.
  seal_ = std::make_unique<WarmupSeal>(parse_after_warmup(config_.after_warmup).value_or(AfterWarmup::off));
  // Without a cache a fleet build would be thrown away.
  if (cache_ && !config_.fleet_targets.empty()) {
    FleetBuilds::Build build = [this](const CompileJob& job, const std::string& ns,
                                      const std::function<bool()>& stopping) -> Result<FleetBuilds::Built> {
      Result<CompileOutcome> built = compile(job, CompileScope{ns, k_fleet_label, stopping, true});
      if (!built) return built.error();
      return built->source == CacheSource::compiled || built->source == CacheSource::joined
                 ? FleetBuilds::Built::compiled
                 : FleetBuilds::Built::cached;
    };
    // A build starts only while the compile queue is empty (no client's
    // compile waits or runs; the fleet runs one build at a time, so none of
    // its own is pending here), and never on the last slot: a client that
    // arrives after this look still finds a free one. With one slot that
    // would be never, so there an empty queue is enough.
    FleetBuilds::MayStart may_start;
    if (admission_)
      may_start = [admission = admission_.get()] {
        const AdmissionSnapshot queue = admission->snapshot();
        const uint64_t spare = admission->slots() > 1 ? 1 : 0;
        return queue.pending == 0 && queue.running + spare < admission->slots();
      };
    fleet_ = std::make_unique<FleetBuilds>(FleetBuilds::Options{.targets = config_.fleet_targets},
                                           std::move(build), std::move(may_start));
  }
}

Status CachedCompiler::after_warmup(const CompileJob& job, const CompilePlan& plan, const CompileScope& scope) const {
  if (scope.fleet) return Ok{};
  const std::optional<SealState> seal = seal_->sealed(scope.ns);
  if (!seal) return Ok{};
  seal_->count_miss(scope.tenant);
  const std::string scope_name =
      seal->all_namespaces ? std::string("this daemon") : "namespace '" + seal->ns + "'";
  const std::string what = "recipe " + recipe_digest(job) + " (" + job.input_name + " for " +
                           job.target.canonical() + ", key " + plan.key.hex + ")";
  if (seal->mode == AfterWarmup::count)
    spdlog::info("compile after warm-up, {} sealed, tenant {}: {}", scope_name, scope.tenant, what);
  else
    spdlog::warn("compile after warm-up, {} sealed ({}), tenant {}: {}", scope_name, to_string(seal->mode),
                 scope.tenant, what);
  if (seal->mode != AfterWarmup::refuse) return Ok{};
  return make_error(ErrorCode::failed_precondition,
                    "warm-up of " + scope_name + " is sealed (after_warmup = \"refuse\"): " + what +
                        " is not cached and is not compiled after warm-up; warm it (kjit warm --target " +
                        job.target.canonical() + ") or lift the seal (kjit warm --unseal)");
}

Result<Artifact> CachedCompiler::run(const CompileJob& job, const CompilePlan& plan, const CompileScope& scope,
                                     const std::function<bool()>& abandoned) const {
  std::optional<CompileAdmission::Ticket> ticket;
  std::optional<CompileAdmission::Slot> slot;
  if (admission_) {
    const std::string tenant(scope.tenant);
    Result<CompileAdmission::Ticket> admitted = admission_->admit(tenant);
    if (!admitted) {
      Error refused = admitted.error();
      refused.retry_after_ms = static_cast<uint32_t>(admission_->retry_after().count());
      return refused;
    }
    ticket.emplace(std::move(admitted.value()));
    Result<CompileAdmission::Slot> granted = admission_->wait_for_slot(tenant, abandoned);
    if (!granted) return granted.error();
    slot.emplace(std::move(granted.value()));
  }
  // The namespace only keeps PCHs of the request's own headers apart by
  // tenant (a worker's; this process keeps none); plan.key, derived
  // without it, is what the cache files the artifact under.
  // A fleet build runs in a background worker: at the lowest CPU priority,
  // it leaves the cores to clients' compiles and hits that come meanwhile.
  return workers_ ? workers_->run(job, plan, scope.ns, abandoned,
                                  scope.fleet ? CompilePriority::background : CompilePriority::client)
                  : pipeline_->run(job, plan, scope.ns);
}

bool CachedCompiler::abandoned(const std::string& stored_key) const {
  std::lock_guard lock(interest_mutex_);
  auto [first, last] = interest_.equal_range(stored_key);
  if (first == last) return false;
  for (auto it = first; it != last; ++it)
    if (!it->second || !(*it->second)()) return false;
  return true;
}

Result<CompileOutcome> CachedCompiler::compile(const CompileJob& job, const CompileScope& scope) const {
  const Clock::time_point received = Clock::now();
  Result<PlanMemo::PlanPtr> planned = plan(job);
  if (!planned) return planned.error();
  if (std::optional<CompileOutcome> hit = memory_hit(**planned, received, scope.ns)) return std::move(*hit);
  return compile(job, **planned, received, scope);
}

Result<PlanMemo::PlanPtr> CachedCompiler::plan(const CompileJob& job) const {
  const uint64_t fingerprint = plan_memo_ ? PlanMemo::fingerprint(job) : 0;
  if (plan_memo_) {
    if (PlanMemo::PlanPtr known = plan_memo_->find(job, fingerprint)) return known;
  }
  Result<CompilePlan> planned = pipeline_->plan(job);
  if (!planned) return planned.error();
  auto shared = std::make_shared<const CompilePlan>(std::move(planned.value()));
  if (plan_memo_) plan_memo_->remember(job, fingerprint, shared);
  return shared;
}

std::optional<CompileOutcome> CachedCompiler::memory_hit(const CompilePlan& plan, Clock::time_point received,
                                                          std::string_view ns) const {
  if (!cache_) return std::nullopt;
  std::optional<CacheHit> hit = cache_->compiles_in(std::string(ns)).get_from_memory(plan.key.hex);
  if (!hit) return std::nullopt;
  if (recipes_) recipes_->touch(ns, plan.key.hex);
  return hit_outcome(std::move(hit->entry), hit->tier, received);
}

Result<CompileOutcome> CachedCompiler::compile(const CompileJob& job, const CompilePlan& plan,
                                                Clock::time_point received, const CompileScope& scope) const {
  // Each namespace has its own entries (and its own compile) in every tier;
  // requests wait on the same flight as the cache names it.
  const std::optional<NamespacedCache> entries =
      cache_ ? std::optional(cache_->compiles_in(std::string(scope.ns))) : std::nullopt;
  const std::string stored_key = entries ? entries->stored_key(plan.key.hex) : plan.key.hex;
  // This request waits on the key's compile until it returns.
  std::unordered_multimap<std::string, const std::function<bool()>*>::iterator interest;
  {
    std::lock_guard lock(interest_mutex_);
    interest = interest_.emplace(stored_key, scope.gone ? &scope.gone : nullptr);
  }
  struct Leave {
    const CachedCompiler* self;
    std::unordered_multimap<std::string, const std::function<bool()>*>::iterator at;
    ~Leave() {
      std::lock_guard lock(self->interest_mutex_);
      self->interest_.erase(at);
    }
  } leave{this, interest};
  const std::function<bool()> is_abandoned = [this, &stored_key] { return abandoned(stored_key); };
  if (!cache_) {
    if (Status sealed = after_warmup(job, plan, scope); !sealed) return sealed.error();
    Result<Artifact> artifact = run(job, plan, scope, is_abandoned);
    if (!artifact) return artifact.error();
    return compiled_outcome(std::make_shared<const Artifact>(std::move(artifact.value())));
  }
  Result<CacheOutcome> outcome = entries->get_or_compile(plan.key.hex, [&]() -> Result<CacheEntry> {
    if (Status sealed = after_warmup(job, plan, scope); !sealed) return sealed.error();
    Result<Artifact> artifact = run(job, plan, scope, is_abandoned);
    if (!artifact) return artifact.error();
    CacheEntry entry;
    for (const StageTiming& stage : artifact->timings) entry.compile_ms += stage.ms;
    entry.artifact = std::move(artifact.value());
    return entry;
  });
  if (!outcome) return outcome.error();
  // Queued, never written here: the request's answer waits for no store.
  // A fleet build is no client's request: the recipe's last target stays
  // the client's.
  const bool portable = is_portable_recipe(job);
  if (recipes_ && !scope.fleet && portable) recipes_->record(job, scope.ns, plan.key.hex);
  // Queued too: the other fleet targets, after a compile (a hit's were
  // queued when it was compiled).
  if (fleet_ && !scope.fleet && portable && outcome->source == CacheSource::compiled) fleet_->offer(job, scope.ns);
  if (outcome->source != CacheSource::compiled && outcome->source != CacheSource::joined)
    return hit_outcome(std::move(outcome->entry), outcome->source, received);
  return compiled_outcome(shared_artifact(std::move(outcome->entry)), outcome->source);
}

}  // namespace kjit
