// Recipes and the warm-up seal, on CachedCompiler in the process (the fake
// pipeline, a memory cache): a compile leaves its request without the
// target as one recipe per namespace, whatever the targets; the bounds
// evict; a removed recipe is gone; a sealed daemon counts, and with
// "refuse" refuses, misses while hits are served.
#include <gtest/gtest.h>

#include <algorithm>

#include "server/compile/recipe_book.h"
#include "unit/server/serving_test_support.h"

namespace kjit {
namespace {

using test::fake_job;
using test::stamped;

CompileScope scope(std::string_view ns, std::string_view tenant = k_operator_label) {
  CompileScope out;
  out.ns = ns;
  out.tenant = tenant;
  return out;
}

class RecipeBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pipeline_ = test::fake_pipeline();
    ASSERT_NE(pipeline_, nullptr);
  }
  std::shared_ptr<const CachedCompiler> compiler(DaemonConfig config = test::test_config()) {
    auto cache = open_daemon_cache(config.cache);
    EXPECT_NE(cache, nullptr);
    return std::make_shared<const CachedCompiler>(config, pipeline_, std::move(cache));
  }
  static std::vector<v1::RecipeSummary> listed(const CachedCompiler& compiler, std::string_view ns) {
    compiler.recipes()->flush();
    Result<std::vector<v1::RecipeSummary>> recipes = compiler.recipes()->list(ns, 0);
    EXPECT_TRUE(recipes) << recipes.error().message;
    return recipes ? *recipes : std::vector<v1::RecipeSummary>{};
  }
  std::shared_ptr<const CompilePipeline> pipeline_;
};

TEST_F(RecipeBookTest, OneRecipePerRequestWithoutItsTarget) {
  auto compiler = this->compiler();
  CompileJob job = fake_job();
  job.headers["kernel.h"] = "#define N 4\n";
  ASSERT_TRUE(compiler->compile(job, scope("team")));
  CompileJob other_target = job;
  other_target.target = parse_target("cuda:80").value();
  ASSERT_TRUE(compiler->compile(other_target, scope("team")));

  const std::vector<v1::RecipeSummary> recipes = listed(*compiler, "team");
  ASSERT_EQ(recipes.size(), 1u);
  EXPECT_EQ(recipes[0].digest(), recipe_digest(job));
  EXPECT_EQ(recipe_digest(job), recipe_digest(other_target));
  EXPECT_EQ(recipes[0].input_name(), "fake.ptx");
  EXPECT_GT(recipes[0].last_asked_unix(), 0);
  EXPECT_EQ(compiler->recipes()->counters().recorded, 1u);

  Result<std::pair<v1::RecipeSummary, v1::CompileRequest>> got = compiler->recipes()->get("team", recipes[0].digest());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(got->second.target().empty());
  EXPECT_EQ(got->second.input().data(), job.input);
  ASSERT_EQ(got->second.headers().count("kernel.h"), 1u);
  EXPECT_EQ(got->second.headers().at("kernel.h"), "#define N 4\n");

  // Another namespace has none of them, and cannot read this one's by digest.
  EXPECT_TRUE(listed(*compiler, "other").empty());
  EXPECT_EQ(compiler->recipes()->get("other", recipes[0].digest()).error().code, ErrorCode::not_found);
}

TEST_F(RecipeBookTest, HitsMoveLastAskedWithoutRecordingAgain) {
  auto compiler = this->compiler();
  const CompileJob job = fake_job();
  ASSERT_TRUE(compiler->compile(job));
  listed(*compiler, "");
  Result<CompileOutcome> hit = compiler->compile(job);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->source, CacheSource::memory);
  EXPECT_EQ(listed(*compiler, "").size(), 1u);
  EXPECT_EQ(compiler->recipes()->counters().recorded, 1u);
}

TEST_F(RecipeBookTest, BoundedInCountAndBytes) {
  DaemonConfig config = test::test_config();
  config.cache.max_recipes = 2;
  auto compiler = this->compiler(config);
  std::vector<CompileJob> jobs;
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(fake_job(stamped(test::k_fake_ptx, i)));
    ASSERT_TRUE(compiler->compile(jobs.back()));
    compiler->recipes()->flush();
  }
  std::vector<v1::RecipeSummary> kept = listed(*compiler, "");
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(compiler->recipes()->counters().evicted, 1u);

  // The evicted one, compiled again (for another target), is recorded anew.
  auto is_kept = [&](const CompileJob& job) {
    return std::any_of(kept.begin(), kept.end(),
                       [&](const v1::RecipeSummary& r) { return r.digest() == recipe_digest(job); });
  };
  auto evicted = std::find_if(jobs.begin(), jobs.end(), [&](const CompileJob& job) { return !is_kept(job); });
  ASSERT_NE(evicted, jobs.end());
  CompileJob again = *evicted;
  again.target = parse_target("cuda:80").value();
  ASSERT_TRUE(compiler->compile(again));
  kept = listed(*compiler, "");
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_TRUE(is_kept(again));

  DaemonConfig small = test::test_config();
  small.cache.max_recipe_bytes = 16;  // smaller than any recipe
  auto tight = this->compiler(small);
  ASSERT_TRUE(tight->compile(fake_job()));
  EXPECT_TRUE(listed(*tight, "").empty());
  EXPECT_EQ(tight->recipes()->counters().dropped, 1u);
}

TEST_F(RecipeBookTest, RemovedRecipeIsGone) {
  auto compiler = this->compiler();
  const CompileJob job = fake_job();
  ASSERT_TRUE(compiler->compile(job));
  const std::string digest = recipe_digest(job);
  ASSERT_EQ(listed(*compiler, "").size(), 1u);
  Result<bool> removed = compiler->recipes()->remove("", digest);
  ASSERT_TRUE(removed);
  EXPECT_TRUE(*removed);
  EXPECT_TRUE(listed(*compiler, "").empty());
  EXPECT_EQ(compiler->recipes()->get("", digest).error().code, ErrorCode::not_found);
  EXPECT_FALSE(*compiler->recipes()->remove("", digest));
}

TEST_F(RecipeBookTest, SealRefusesMissesAndServesHits) {
  auto compiler = this->compiler();
  const CompileJob warmed = fake_job();
  ASSERT_TRUE(compiler->compile(warmed));
  compiler->seal().seal(true, {}, AfterWarmup::refuse);

  Result<CompileOutcome> hit = compiler->compile(warmed, scope("", "alice"));
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_EQ(hit->source, CacheSource::memory);

  const CompileJob cold = fake_job(stamped(test::k_fake_ptx, 7));
  Result<CompileOutcome> refused = compiler->compile(cold, scope("", "alice"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(refused.error().message.find("sealed"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find(recipe_digest(cold)), std::string::npos) << refused.error().message;
  EXPECT_EQ(compiler->seal().misses_by_tenant(), (std::map<std::string, uint64_t>{{"alice", 1}}));

  // A namespace's own seal counts without refusing; lifting every seal compiles.
  compiler->seal().seal(false, "team", AfterWarmup::count);
  EXPECT_TRUE(compiler->compile(cold, scope("team", "bob")));
  EXPECT_EQ(compiler->seal().misses_by_tenant().at("bob"), 1u);
  compiler->seal().unseal(true, {});
  EXPECT_TRUE(compiler->compile(cold, scope("", "alice")));
  EXPECT_EQ(compiler->seal().misses_by_tenant().at("alice"), 1u);
}

TEST_F(RecipeBookTest, ConfiguredAfterWarmupStartsSealed) {
  DaemonConfig config = test::test_config();
  config.after_warmup = "refuse";
  auto compiler = this->compiler(config);
  Result<CompileOutcome> refused = compiler->compile(fake_job());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition);
  ASSERT_EQ(compiler->seal().seals().size(), 1u);
  EXPECT_TRUE(compiler->seal().seals()[0].all_namespaces);
}

}  // namespace
TEST(RecipePortability, TritonIrNamingItsTargetIsNoRecipeForOthers) {
  CompileJob ttir;
  ttir.input_kind = InputKind::triton;
  ttir.input = "module {\n  tt.func public @k() { tt.return }\n}\n";
  EXPECT_TRUE(is_portable_recipe(ttir));
  CompileJob bound = ttir;
  bound.input = "module attributes {\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:90\"} {}\n";
  EXPECT_FALSE(is_portable_recipe(bound));
  CompileJob cuda;
  cuda.input_kind = InputKind::cuda_source;
  cuda.input = "// ttg.target in a comment of CUDA C++\n__global__ void k() {}\n";
  EXPECT_TRUE(is_portable_recipe(cuda));
}

}  // namespace kjit
