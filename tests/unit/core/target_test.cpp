#include <gtest/gtest.h>

#include "target/target.h"

namespace kjit {
namespace {

TEST(Target, ParsesPlainArchSpecificAndFamilyTargets) {
  auto t = parse_target("cuda:90");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sm, 90u);
  EXPECT_EQ(t->suffix, '\0');
  EXPECT_EQ(t->canonical(), "cuda:90");
  EXPECT_EQ(t->sm_name(), "sm_90");
  EXPECT_EQ(t->compute_name(), "compute_90");

  auto a = parse_target("cuda:90a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->suffix, 'a');
  EXPECT_EQ(a->sm_name(), "sm_90a");

  auto f = parse_target("cuda:100f");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->compute_name(), "compute_100f");
}

TEST(Target, SmAliasGivesTheCanonicalForm) {
  auto t = parse_target("sm_120a");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->canonical(), "cuda:120a");
}

TEST(Target, UnknownArchitectureListsTheKnownTargets) {
  auto t = parse_target("cuda:91");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(t.error().message.find("cuda:75"), std::string::npos);
  EXPECT_NE(t.error().message.find("cuda:121f"), std::string::npos);
}

TEST(Target, SuffixesOnlyWhereTheArchitectureHasThem) {
  EXPECT_FALSE(parse_target("cuda:80a"));
  EXPECT_FALSE(parse_target("cuda:90f"));
  EXPECT_TRUE(parse_target("cuda:103a"));
  EXPECT_FALSE(parse_target("cuda:90b"));
  EXPECT_FALSE(parse_target("cuda:90aa"));
}

TEST(Target, MalformedTextIsRejected) {
  for (const char* text : {"", "cuda:", "cuda:x", "90", "hip:gfx9999", "hip", "cuda:-90", "cuda: 90"})
    EXPECT_FALSE(parse_target(text)) << text;
}

TEST(Target, RubinIsKnownWithOversizedSharedMemory) {
  auto t = parse_target("cuda:107");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->arch().oversized_shared_memory);
  EXPECT_EQ(t->arch().min_cuda, "13.4");
  EXPECT_FALSE(parse_target("cuda:90")->arch().oversized_shared_memory);
}

TEST(Target, HopperOptInSharedMemoryIs227KiB) {
  EXPECT_EQ(parse_target("cuda:90")->arch().smem_per_block_optin, 232448u);
  EXPECT_EQ(parse_target("cuda:80")->arch().smem_per_block_optin, 166912u);
  EXPECT_EQ(parse_target("cuda:89")->arch().smem_per_block_optin, 101376u);
}

}  // namespace
}  // namespace kjit
