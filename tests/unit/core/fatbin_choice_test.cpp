#include "target/fatbin_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace kjit {
namespace {

Target t(std::string_view text) { return parse_target(text).value(); }

TEST(FatbinChoiceTest, TheExactCubinWins) {
  std::vector<Target> cubins{t("cuda:80"), t("cuda:90"), t("cuda:100")};
  auto choice = choose_fatbin_entry(cubins, t("cuda:100"), t("cuda:90"));
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->target, t("cuda:90"));
  EXPECT_FALSE(choice->ptx);
}

TEST(FatbinChoiceTest, ANewerMinorOfTheSameMajorRunsTheOlderCubin) {
  std::vector<Target> cubins{t("cuda:80"), t("cuda:90")};
  auto choice = choose_fatbin_entry(cubins, t("cuda:90"), t("cuda:86"));
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->target, t("cuda:80"));
  EXPECT_FALSE(choice->ptx);
}

TEST(FatbinChoiceTest, ANewerMajorFallsBackToPtx) {
  std::vector<Target> cubins{t("cuda:80"), t("cuda:90")};
  auto choice = choose_fatbin_entry(cubins, t("cuda:90"), t("cuda:100"));
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->target, t("cuda:90"));
  EXPECT_TRUE(choice->ptx);
}

TEST(FatbinChoiceTest, AnArchSpecificCubinRunsOnlyOnItsOwnArchitecture) {
  EXPECT_TRUE(cubin_runs_on(t("cuda:90a"), t("cuda:90")));
  EXPECT_FALSE(cubin_runs_on(t("cuda:100a"), t("cuda:103")));
  EXPECT_TRUE(cubin_runs_on(t("cuda:100f"), t("cuda:103")));
  EXPECT_TRUE(cubin_runs_on(t("cuda:100"), t("cuda:103")));
  EXPECT_FALSE(cubin_runs_on(t("cuda:103"), t("cuda:100")));
  EXPECT_FALSE(cubin_runs_on(t("cuda:90"), t("cuda:100")));
}

TEST(FatbinChoiceTest, TheSpecialisedCubinIsPreferredOnItsArchitecture) {
  std::vector<Target> cubins{t("cuda:90"), t("cuda:90a")};
  auto choice = choose_fatbin_entry(cubins, t("cuda:90"), t("cuda:90"));
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->target, t("cuda:90a"));
}

TEST(FatbinChoiceTest, AnOlderGpuThanEveryPartLoadsNothing) {
  std::vector<Target> cubins{t("cuda:90"), t("cuda:100")};
  EXPECT_FALSE(choose_fatbin_entry(cubins, t("cuda:100"), t("cuda:80")));
  EXPECT_FALSE(choose_fatbin_entry(cubins, std::nullopt, t("cuda:120")));
}

}  // namespace
}  // namespace kjit
