// The daemon's memo of plans: an equal job finds its plan, a job that
// differs in anything never does (even under the same fingerprint, as a
// crafted hash collision would give), and the memo stays within its bytes.
#include "server/compile/plan_memo.h"

#include <gtest/gtest.h>

namespace kjit {
namespace {

CompileJob job_with(std::string input) {
  CompileJob job;
  job.input_kind = InputKind::cuda_source;
  job.input = std::move(input);
  job.input_name = "k.cu";
  job.target = parse_target("cuda:90").value();
  job.options = {"-DN=4"};
  job.headers = {{"h.h", "#define X 1"}};
  job.pass_args = {{"nvrtc-compile.x", "1"}};
  return job;
}

PlanMemo::PlanPtr plan_named(const std::string& hex) {
  auto plan = std::make_shared<CompilePlan>();
  plan->key.hex = hex;
  return plan;
}

TEST(PlanMemo, AnEqualJobFindsItsPlan) {
  PlanMemo memo(1 << 20);
  const CompileJob job = job_with("__global__ void k() {}");
  const uint64_t fingerprint = PlanMemo::fingerprint(job);
  EXPECT_EQ(memo.find(job, fingerprint), nullptr);
  memo.remember(job, fingerprint, plan_named("a"));
  const CompileJob same = job_with("__global__ void k() {}");
  EXPECT_EQ(PlanMemo::fingerprint(same), fingerprint);
  ASSERT_NE(memo.find(same, fingerprint), nullptr);
  EXPECT_EQ(memo.find(same, fingerprint)->key.hex, "a");
}

TEST(PlanMemo, AJobThatDiffersInAnyFieldNeverFindsAnothersPlan) {
  PlanMemo memo(1 << 20);
  const CompileJob job = job_with("__global__ void k() {}");
  const uint64_t fingerprint = PlanMemo::fingerprint(job);
  memo.remember(job, fingerprint, plan_named("a"));
  std::vector<CompileJob> others(8, job);
  others[0].input += " ";
  others[1].input_name = "other.cu";
  others[2].target = parse_target("cuda:80").value();
  others[3].options.push_back("-lineinfo");
  others[4].headers["h.h"] = "#define X 2";
  others[5].name_expressions.push_back("k");
  others[6].pass_args["nvrtc-compile.x"] = "2";
  others[7].allow_ptx_fallback = true;
  for (const CompileJob& other : others) {
    EXPECT_NE(PlanMemo::fingerprint(other), fingerprint);
    // Under the first job's fingerprint, as a crafted collision would be.
    EXPECT_EQ(memo.find(other, fingerprint), nullptr);
  }
}

TEST(PlanMemo, StaysWithinItsBytesDroppingTheLeastRecentlyUsed) {
  // 16 shards of 64 KiB: a few 10 KiB jobs per shard.
  PlanMemo memo(16 * (64 << 10));
  std::vector<CompileJob> jobs;
  for (int i = 0; i < 400; ++i) jobs.push_back(job_with(std::to_string(i) + std::string(10 << 10, 'x')));
  for (const CompileJob& job : jobs) memo.remember(job, PlanMemo::fingerprint(job), plan_named("p"));
  size_t kept = 0;
  for (const CompileJob& job : jobs) kept += memo.find(job, PlanMemo::fingerprint(job)) != nullptr;
  EXPECT_GT(kept, 0u);
  EXPECT_LE(kept, 16u * 6) << "more jobs kept than 16 shards of 64 KiB hold";
  EXPECT_NE(memo.find(jobs.back(), PlanMemo::fingerprint(jobs.back())), nullptr) << "the most recent was dropped";
  EXPECT_EQ(memo.find(jobs.front(), PlanMemo::fingerprint(jobs.front())), nullptr) << "the oldest was kept";
}

}  // namespace
}  // namespace kjit
