// Fleet builds: the queue is bounded (in builds and bytes) and
// de-duplicated by recipe, namespace and target; a build waits while the
// compile queue says no; builds go only to the same vendor's other targets;
// failures are counted with their reason; and through CachedCompiler a
// compile for one fleet target leaves a hit for the other, which a seal
// does not count.
#include "server/compile/fleet_builds.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "support/eventually.h"
#include "unit/server/serving_test_support.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;

std::vector<Target> targets(std::initializer_list<const char*> names) {
  std::vector<Target> out;
  for (const char* name : names) out.push_back(parse_target(name).value());
  return out;
}

CompileJob job_for(const char* target, std::string input = "// kernel\n") {
  CompileJob job = test::fake_job(std::move(input));
  job.target = parse_target(target).value();
  return job;
}

// A build that holds until released, recording what it was asked to build.
class HeldBuilds {
 public:
  FleetBuilds::Build build() {
    return [this](const CompileJob& job, const std::string& ns, const std::function<bool()>& stopping)
               -> Result<FleetBuilds::Built> {
      std::unique_lock lock(mutex_);
      built_.push_back(ns + "/" + job.target.canonical());
      ++running_;
      // stopping() has no notification of ours: looked at as the daemon's waits do.
      while (!changed_.wait_for(lock, 1ms, [&] { return released_ || stopping(); })) {
      }
      --running_;
      if (job.input.find("fail") != std::string::npos) return make_error(ErrorCode::invalid_argument, "it failed");
      return FleetBuilds::Built::compiled;
    };
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }
  std::vector<std::string> built() const {
    std::lock_guard lock(mutex_);
    return built_;
  }
  int running() const {
    std::lock_guard lock(mutex_);
    return running_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> built_;
  int running_ = 0;
  bool released_ = false;
};

FleetBuilds::Options options(std::vector<Target> fleet, size_t max_queued = 16) {
  FleetBuilds::Options o;
  o.targets = std::move(fleet);
  o.max_queued = max_queued;
  o.yield_poll = 1ms;
  return o;
}

TEST(FleetBuilds, BuildsTheSameVendorsOtherTargetsOnly) {
  HeldBuilds held;
  held.release();
  FleetBuilds fleet(options(targets({"cuda:80", "cuda:90", "cuda:100", "hip:gfx942"})), held.build(), {});
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), "team"), 2u);
  ASSERT_TRUE(test::eventually([&] { return fleet.stats().compiled == 2; }));
  std::vector<std::string> built = held.built();
  std::sort(built.begin(), built.end());
  EXPECT_EQ(built, (std::vector<std::string>{"team/cuda:100", "team/cuda:80"}));
  // A target the fleet does not list still builds for the fleet's.
  EXPECT_EQ(fleet.offer(job_for("cuda:75", "// other\n"), ""), 3u);
  // An AMD job has no other AMD target here.
  CompileJob amd = job_for("hip:gfx942");
  EXPECT_EQ(fleet.offer(amd, ""), 0u);
}

TEST(FleetBuilds, TheQueueIsDeduplicatedByRecipeNamespaceAndTarget) {
  HeldBuilds held;
  FleetBuilds fleet(options(targets({"cuda:80", "cuda:90", "cuda:100"})), held.build(), {});
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), ""), 2u);
  ASSERT_TRUE(test::eventually([&] { return held.running() == 1; }));
  // The same recipe again: one build runs, one waits; neither is queued twice.
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), ""), 0u);
  // Compiled for cuda:80 now: cuda:90 is new, cuda:100 is the same build.
  EXPECT_EQ(fleet.offer(job_for("cuda:80"), ""), 1u);
  // Another namespace's is another build, and so is another recipe.
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), "team"), 2u);
  EXPECT_EQ(fleet.offer(job_for("cuda:90", "// another kernel\n"), ""), 2u);
  EXPECT_EQ(fleet.stats().queued, 6u);
  EXPECT_EQ(fleet.stats().dropped, 0u);
  held.release();
  ASSERT_TRUE(test::eventually([&] { return fleet.stats().compiled == 7; }));
  EXPECT_EQ(fleet.stats().queued, 0u);
  // Done, so no longer a duplicate: a later offer builds again (a lookup, in the daemon).
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), ""), 2u);
}

TEST(FleetBuilds, TheQueueIsBoundedInBuildsAndBytes) {
  HeldBuilds held;
  FleetBuilds fleet(options(targets({"cuda:80", "cuda:90", "cuda:100"}), 2), held.build(), {});
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), ""), 2u);
  ASSERT_TRUE(test::eventually([&] { return held.running() == 1; }));
  ASSERT_EQ(fleet.stats().queued, 1u);
  // One place left: one of the two builds is queued, the other dropped.
  EXPECT_EQ(fleet.offer(job_for("cuda:90", "// b\n"), ""), 1u);
  FleetStats stats = fleet.stats();
  EXPECT_EQ(stats.queued, 2u);
  EXPECT_EQ(stats.dropped, 1u);
  held.release();
  ASSERT_TRUE(test::eventually([&] { return fleet.stats().compiled == 3; }));

  HeldBuilds small;
  FleetBuilds::Options bytes = options(targets({"cuda:80", "cuda:90"}));
  bytes.max_queued_bytes = 100;
  FleetBuilds bounded(bytes, small.build(), {});
  EXPECT_EQ(bounded.offer(job_for("cuda:90", std::string(101, 'x')), ""), 0u);
  EXPECT_EQ(bounded.stats().dropped, 1u);
  EXPECT_EQ(bounded.offer(job_for("cuda:90", std::string(100, 'x')), ""), 1u);
  small.release();
}

TEST(FleetBuilds, ABuildWaitsWhileTheCompileQueueSaysNo) {
  HeldBuilds held;
  held.release();
  std::atomic<bool> clients_waiting{true};
  std::atomic<int> asked{0};
  FleetBuilds fleet(options(targets({"cuda:80", "cuda:90"})), held.build(), [&] {
    ++asked;
    return !clients_waiting.load();
  });
  EXPECT_EQ(fleet.offer(job_for("cuda:90"), ""), 1u);
  // Asked several times, told no each time: nothing built, one build yielded.
  ASSERT_TRUE(test::eventually([&] { return asked.load() >= 5; }));
  EXPECT_TRUE(held.built().empty());
  EXPECT_EQ(fleet.stats().yielded, 1u);
  EXPECT_EQ(fleet.stats().queued, 1u);
  clients_waiting = false;
  ASSERT_TRUE(test::eventually([&] { return fleet.stats().compiled == 1; }));
  EXPECT_EQ(held.built(), std::vector<std::string>{"/cuda:80"});
}

TEST(FleetBuilds, FailuresAreCountedWithTheirReason) {
  HeldBuilds held;
  held.release();
  FleetBuilds fleet(options(targets({"cuda:80", "cuda:90"})), held.build(), {});
  EXPECT_EQ(fleet.offer(job_for("cuda:90", "// fail\n"), ""), 1u);
  ASSERT_TRUE(test::eventually([&] { return fleet.stats().failed == 1; }));
  EXPECT_EQ(fleet.stats().last_failure, "cuda:80: it failed");
  EXPECT_EQ(fleet.stats().compiled, 0u);
}

TEST(FleetBuilds, DestroyingStopsTheBuildInFlightAndDropsTheRest) {
  HeldBuilds held;
  {
    FleetBuilds fleet(options(targets({"cuda:80", "cuda:90", "cuda:100"})), held.build(), {});
    EXPECT_EQ(fleet.offer(job_for("cuda:90"), ""), 2u);
    ASSERT_TRUE(test::eventually([&] { return held.running() == 1; }));
  }  // the held build sees stopping() and returns; the other never starts
  EXPECT_EQ(held.built().size(), 1u);
}

// Through CachedCompiler: a compile for one fleet target is built for the
// other in the background; that build is not a miss after warm-up.
TEST(FleetBuilds, ACompileForOneFleetTargetBecomesAHitForTheOther) {
  std::shared_ptr<const CompilePipeline> pipeline = test::fake_pipeline();
  ASSERT_NE(pipeline, nullptr);
  DaemonConfig config = test::test_config();
  config.fleet_targets = targets({"cuda:80", "cuda:90"});
  config.after_warmup = "count";
  auto cache = open_daemon_cache(test::cache_config());
  ASSERT_NE(cache, nullptr);
  auto admission = std::make_shared<CompileAdmission>(CompileAdmission::Options{});
  CachedCompiler compiler(config, pipeline, cache, nullptr, admission);
  ASSERT_NE(compiler.fleet(), nullptr);

  Result<CompileOutcome> first = compiler.compile(job_for("cuda:90", test::k_fake_ptx));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->source, CacheSource::compiled);
  ASSERT_TRUE(test::eventually([&] { return compiler.fleet()->stats().compiled == 1; }))
      << compiler.fleet()->stats().last_failure;

  Result<PlanMemo::PlanPtr> other = compiler.plan(job_for("cuda:80", test::k_fake_ptx));
  ASSERT_TRUE(other) << other.error().message;
  std::optional<CompileOutcome> hit = compiler.memory_hit(**other, CachedCompiler::Clock::now());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->artifact->target, "cuda:80");
  // The client's miss is counted under the seal; the fleet build is warming.
  EXPECT_EQ(compiler.seal().misses_by_tenant(), (std::map<std::string, uint64_t>{{"(operator)", 1}}));
}

}  // namespace
}  // namespace kjit
