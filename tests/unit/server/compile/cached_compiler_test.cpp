// CachedCompiler in the process, no socket and no daemon: a real
// CompilePipeline whose "fake" pipeline runs the fake-stamp pass (no
// toolchain) and a real compile cache. A first request compiles and the next
// is a memory hit; equal jobs share one plan; concurrent identical requests
// run one compile; a compile error reaches every waiter and is never cached;
// without a cache every request compiles; a fresh daemon finds the disk tier.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "unit/server/serving_test_support.h"

namespace kjit {
namespace {

using test::FakePasses;
using test::fake_job;
using test::k_fake_ptx;
using test::stamped;

// The outcome's source as the Compile RPC spells it ("compiled", "memory"...).
std::string source(const CompileOutcome& outcome) { return std::string(to_string(outcome.source)); }

bool is_key_hex(const std::string& key) {
  return key.size() == 64 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

class CachedCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pipeline_ = test::fake_pipeline();
    ASSERT_NE(pipeline_, nullptr);
  }

  std::shared_ptr<const CachedCompiler> compiler(std::shared_ptr<DaemonCache> cache) const {
    return std::make_shared<const CachedCompiler>(test::test_config(), pipeline_, std::move(cache));
  }
  static std::shared_ptr<DaemonCache> memory_cache() {
    auto cache = open_daemon_cache(test::cache_config());
    EXPECT_NE(cache, nullptr);
    return cache;
  }

  // Runs `threads` identical compiles of `job` while the pass is held at its
  // gate, releasing it once every thread has called compile() and the one
  // compile that may run is waiting at the gate. Single flight means no
  // other compile of the key can start meanwhile: checked before release.
  std::vector<Result<CompileOutcome>> compile_concurrently(const CachedCompiler& compiler, const CompileJob& job,
                                                           int threads) {
    passes_.hold();
    std::atomic<int> entered{0};
    std::vector<std::optional<Result<CompileOutcome>>> results(threads);
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i) {
      workers.emplace_back([&, i] {
        ++entered;
        results[i].emplace(compiler.compile(job));
      });
    }
    EXPECT_TRUE(passes_.wait_blocked(1)) << "no compile reached the pass";
    EXPECT_TRUE(test::eventually([&] { return entered.load() == threads; }, test::k_eventually_deadline,
                                 std::chrono::milliseconds(1)));
    // Time for the others to reach the single flight (were it missing, they
    // would pile up at the gate instead).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(passes_.blocked(), 1) << "more than one compile of the same key ran at once";
    passes_.release();
    for (std::thread& worker : workers) worker.join();
    std::vector<Result<CompileOutcome>> out;
    for (auto& result : results) out.push_back(std::move(*result));
    return out;
  }

  std::shared_ptr<const CompilePipeline> pipeline_;
  FakePasses passes_;
};

TEST_F(CachedCompilerTest, AFirstRequestCompilesAndTheSecondIsAMemoryHitUnderTheSameKey) {
  auto front = compiler(memory_cache());
  const CompileJob job = fake_job();
  const int before = passes_.calls();

  Result<CompileOutcome> first = front->compile(job);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(source(*first), "compiled");
  EXPECT_EQ(passes_.calls(), before + 1);
  const Artifact& artifact = *first->artifact;
  EXPECT_EQ(artifact.bytes, stamped(k_fake_ptx, before + 1));
  EXPECT_EQ(artifact.kind, ArtifactKind::ptx);
  EXPECT_EQ(artifact.pipeline, "fake");
  EXPECT_EQ(artifact.target, "cuda:90");
  EXPECT_TRUE(is_key_hex(artifact.key)) << artifact.key;
  EXPECT_NE(artifact.log.find("fake-stamp ran"), std::string::npos) << artifact.log;
  ASSERT_FALSE(first->timings.empty());
  EXPECT_EQ(first->timings[0].stage, "stamp");

  Result<CompileOutcome> second = front->compile(job);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(source(*second), "memory");
  EXPECT_EQ(passes_.calls(), before + 1) << "a memory hit ran the pipeline";
  EXPECT_EQ(second->artifact->key, artifact.key);
  EXPECT_EQ(second->artifact->bytes, artifact.bytes);
  // What ran for the hit is a lookup, not the compile's stages.
  ASSERT_EQ(second->timings.size(), 1u);
  EXPECT_EQ(second->timings[0].stage, "cache");
  ASSERT_EQ(second->timings[0].passes.size(), 1u);
  EXPECT_EQ(second->timings[0].passes[0].pass, "lookup-memory");

  // The steps the Compile RPC takes give the same answer.
  Result<PlanMemo::PlanPtr> plan = front->plan(job);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ((*plan)->key.hex, artifact.key);
  std::optional<CompileOutcome> hit = front->memory_hit(**plan, CachedCompiler::Clock::now());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(source(*hit), "memory");
  EXPECT_EQ(hit->artifact->bytes, artifact.bytes);

  CoalescerStats once = front->cache()->coalescer_stats();
  EXPECT_EQ(once.compiles, 1u);
}

TEST_F(CachedCompilerTest, ThePlanMemoAnswersEqualJobsWithTheSamePlan) {
  auto front = compiler(memory_cache());
  const CompileJob job = fake_job();
  Result<PlanMemo::PlanPtr> first = front->plan(job);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ((*first)->pipeline.name, "fake");
  EXPECT_TRUE(is_key_hex((*first)->key.hex));

  const CompileJob equal = fake_job();  // another object, equal fields
  Result<PlanMemo::PlanPtr> again = front->plan(equal);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->get(), first->get()) << "an equal job derived its plan again";

  // The memo's answer is the pipeline's own: same key as a fresh derivation.
  Result<CacheKey> derived = pipeline_->key(job);
  ASSERT_TRUE(derived) << derived.error().message;
  EXPECT_EQ((*first)->key.hex, derived->hex);

  CompileJob other_input = fake_job(std::string(k_fake_ptx) + "// another module\n");
  Result<PlanMemo::PlanPtr> other = front->plan(other_input);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_NE(other->get(), first->get());
  EXPECT_NE((*other)->key.hex, (*first)->key.hex);

  CompileJob tagged = fake_job();
  tagged.pass_args["fake-stamp.tag"] = "x";
  Result<PlanMemo::PlanPtr> with_arg = front->plan(tagged);
  ASSERT_TRUE(with_arg) << with_arg.error().message;
  EXPECT_NE((*with_arg)->key.hex, (*first)->key.hex);
  EXPECT_EQ((*with_arg)->args.at("fake-stamp.tag"), "x");
}

TEST_F(CachedCompilerTest, PassArgumentsReachThePassAndAreCheckedAtPlanning) {
  auto front = compiler(memory_cache());
  const int before = passes_.calls();
  CompileJob tagged = fake_job();
  tagged.pass_args["fake-stamp.tag"] = "blue";
  Result<CompileOutcome> outcome = front->compile(tagged);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->artifact->bytes,
            std::string(k_fake_ptx) + "\n// fake-stamp " + std::to_string(before + 1) + " tag=blue\n");

  CompileJob unknown_arg = fake_job();
  unknown_arg.pass_args["fake-stamp.colour"] = "red";
  Result<CompileOutcome> refused = front->compile(unknown_arg);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(refused.error().message.find("takes no argument 'colour'"), std::string::npos) << refused.error().message;

  CompileJob unknown_pipeline = fake_job();
  unknown_pipeline.pipeline = "nope";
  Result<CompileOutcome> missing = front->compile(unknown_pipeline);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(missing.error().message.find("no pipeline named 'nope'"), std::string::npos) << missing.error().message;
  EXPECT_EQ(passes_.calls(), before + 1) << "a request refused at planning ran the pipeline";
}

TEST_F(CachedCompilerTest, ConcurrentIdenticalRequestsRunOneCompile) {
  auto front = compiler(memory_cache());
  const CompileJob job = fake_job(std::string(k_fake_ptx) + "// concurrent\n");
  const int before = passes_.calls();
  constexpr int k_threads = 8;

  std::vector<Result<CompileOutcome>> results = compile_concurrently(*front, job, k_threads);

  EXPECT_EQ(passes_.calls(), before + 1);
  int compiled = 0, joined = 0, memory = 0;
  for (const Result<CompileOutcome>& result : results) {
    ASSERT_TRUE(result) << result.error().message;
    if (source(*result) == "compiled") ++compiled;
    else if (source(*result) == "joined") ++joined;
    else if (source(*result) == "memory") ++memory;
    else ADD_FAILURE() << "unexpected cache field " << source(*result);
    EXPECT_EQ(result->artifact->bytes, stamped(job.input, before + 1));
    EXPECT_EQ(result->artifact->key, results[0]->artifact->key);
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(joined + memory, k_threads - 1);
  CoalescerStats once = front->cache()->coalescer_stats();
  EXPECT_EQ(once.compiles, 1u);
  EXPECT_GE(once.joined, static_cast<uint64_t>(joined));
}

TEST_F(CachedCompilerTest, ACompileErrorReachesEveryWaiterAndIsNotCached) {
  auto front = compiler(memory_cache());
  const CompileJob job = fake_job(std::string(k_fake_ptx) + "// FAIL-ME\n");
  const int before = passes_.calls();
  constexpr int k_threads = 6;

  std::vector<Result<CompileOutcome>> results = compile_concurrently(*front, job, k_threads);

  for (const Result<CompileOutcome>& result : results) {
    ASSERT_FALSE(result) << "a failing compile answered " << source(*result);
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(result.error().message.find("stamp/fake-stamp"), std::string::npos) << result.error().message;
    EXPECT_NE(result.error().message.find("failed (code 3)"), std::string::npos) << result.error().message;
    EXPECT_NE(result.error().log.find("refusing this module on purpose"), std::string::npos) << result.error().log;
  }
  const int ran = passes_.calls() - before;
  EXPECT_GE(ran, 1);
  EXPECT_LE(ran, k_threads);

  // Nothing was cached: no memory hit, no entry, and the next request
  // compiles (and fails) again.
  Result<PlanMemo::PlanPtr> plan = front->plan(job);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(front->memory_hit(**plan, CachedCompiler::Clock::now()).has_value());
  TieredCacheStats stats = front->cache()->stats();
  ASSERT_EQ(stats.tiers.size(), 1u);
  EXPECT_EQ(stats.tiers[0].store.entries, 0u);
  EXPECT_EQ(stats.tiers[0].store.puts, 0u);
  Result<CompileOutcome> again = front->compile(job);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(passes_.calls() - before, ran + 1);
}

TEST_F(CachedCompilerTest, WithoutACacheEveryRequestCompiles) {
  CacheConfig off = test::cache_config();
  off.enabled = false;
  EXPECT_EQ(open_daemon_cache(off), nullptr);
  auto front = compiler(nullptr);
  EXPECT_EQ(front->cache(), nullptr);
  const CompileJob job = fake_job();
  const int before = passes_.calls();
  for (int i = 1; i <= 3; ++i) {
    Result<CompileOutcome> outcome = front->compile(job);
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_EQ(source(*outcome), "compiled");
    EXPECT_EQ(outcome->artifact->bytes, stamped(k_fake_ptx, before + i));
  }
  EXPECT_EQ(passes_.calls(), before + 3);
  Result<PlanMemo::PlanPtr> plan = front->plan(job);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(front->memory_hit(**plan, CachedCompiler::Clock::now()).has_value());

  Result<CompileOutcome> failing = front->compile(fake_job(std::string(k_fake_ptx) + "// FAIL-ME\n"));
  ASSERT_FALSE(failing);
  EXPECT_EQ(failing.error().code, ErrorCode::invalid_argument);
}

TEST_F(CachedCompilerTest, AFreshDaemonFindsTheDiskTierThenItsOwnMemory) {
  test::TempDir dir;
  const CompileJob job = fake_job(std::string(k_fake_ptx) + "// on disk\n");
  const int before = passes_.calls();
  std::string key;
  {
    auto cache = open_daemon_cache(test::cache_config(dir.path()));
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(cache->has_disk()) << "the disk tier did not open in " << dir.path();
    Result<CompileOutcome> first = compiler(cache)->compile(job);
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(source(*first), "compiled");
    key = first->artifact->key;
  }
  // Another daemon (its own memory tier, empty) on the same directory.
  auto cache = open_daemon_cache(test::cache_config(dir.path()));
  ASSERT_NE(cache, nullptr);
  auto front = compiler(cache);
  Result<CompileOutcome> from_disk = front->compile(job);
  ASSERT_TRUE(from_disk) << from_disk.error().message;
  EXPECT_EQ(source(*from_disk), "disk");
  EXPECT_EQ(from_disk->artifact->key, key);
  EXPECT_EQ(from_disk->artifact->bytes, stamped(job.input, before + 1));
  ASSERT_EQ(from_disk->timings.size(), 1u);
  EXPECT_EQ(from_disk->timings[0].passes.at(0).pass, "lookup-disk");
  Result<CompileOutcome> from_memory = front->compile(job);
  ASSERT_TRUE(from_memory) << from_memory.error().message;
  EXPECT_EQ(source(*from_memory), "memory");
  EXPECT_EQ(passes_.calls(), before + 1);
}

}  // namespace
}  // namespace kjit
