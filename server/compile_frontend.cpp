#include "compile_frontend.h"

#include <chrono>

namespace kjit {

CompileFrontend::CompileFrontend(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline,
                                 std::shared_ptr<CompileCache> cache)
    : config_(std::move(config)), pipeline_(std::move(pipeline)), cache_(std::move(cache)) {}

Result<CompileOutcome> CompileFrontend::compile(const CompileJob& job) const {
  if (!cache_) {
    Result<Artifact> artifact = pipeline_->run(job);
    if (!artifact) return artifact.error();
    return CompileOutcome{std::move(artifact.value()), "compiled"};
  }
  auto start = std::chrono::steady_clock::now();
  Result<CacheKey> key = pipeline_->key(job);
  if (!key) return key.error();
  Result<CacheOutcome> outcome = cache_->once->get_or_compile(key->hex, [&]() -> Result<CacheEntry> {
    Result<Artifact> artifact = pipeline_->run(job);
    if (!artifact) return artifact.error();
    CacheEntry entry;
    entry.key = key->hex;
    for (const StageTiming& stage : artifact->timings) entry.compile_ms += stage.ms;
    entry.artifact = std::move(artifact.value());
    return entry;
  });
  if (!outcome) return outcome.error();

  CompileOutcome result{outcome->entry->artifact, std::string(to_string(outcome->source))};
  if (outcome->source != CacheSource::compiled) {
    // What ran for this request was a lookup, not the stages of the compile
    // that filled the cache.
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    result.artifact.timings = {{"cache", ms, {{"lookup-" + result.cache, ms}}}};
  }
  result.artifact.key = key->hex;
  result.artifact.key_components = key->components;
  return result;
}

}  // namespace kjit
