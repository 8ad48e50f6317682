// Reading NVRTC's automatic-PCH lines out of its log: what was used and
// written is counted, the lines leave the log, the compiler's own warnings
// and errors stay.
#include <gtest/gtest.h>

#include "backends/nvrtc/nvrtc_pch.h"

namespace kjit {
namespace {

TEST(NvrtcPchLog, UsedAndCreatedFilesAreReadAndRemoved) {
  std::string log =
      "\"k.cu\": using precompiled header file \"/w/pch/ab/k_0.pch\"\n"
      "\"k.cu\": creating precompiled header file \"/w/pch/ab/k_1.pch\"\n"
      "k.cu(5): warning #20054-D: dynamic initialization is not supported\n";
  const PchLog pch = take_pch_lines(log);
  EXPECT_EQ(pch.used, std::vector<std::string>{"/w/pch/ab/k_0.pch"});
  EXPECT_EQ(pch.created, std::vector<std::string>{"/w/pch/ab/k_1.pch"});
  EXPECT_FALSE(pch.ignored);
  EXPECT_FALSE(pch.refused);
  EXPECT_EQ(log, "k.cu(5): warning #20054-D: dynamic initialization is not supported\n");
}

TEST(NvrtcPchLog, AnIgnoredPchWarningGoesWithItsRemarkWhenNoOtherWarningIsLeft) {
  std::string log =
      "Warning #20282-D: incompatible precompiled header (PCH) heap allocation address from PCH file \"/p/k_0.pch\".\n"
      "\n"
      "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
      "\n"
      "\"k.cu\": creating precompiled header file \"/p/k_0.pch\"\n";
  const PchLog pch = take_pch_lines(log);
  EXPECT_TRUE(pch.ignored);
  EXPECT_EQ(pch.created.size(), 1u);
  EXPECT_EQ(log, "");
}

TEST(NvrtcPchLog, AnInvalidPchIsARefusalAndAnOrdinaryErrorIsNot) {
  std::string refused =
      "Catastrophic error: invalid precompiled header file\n\n1 catastrophic error detected in the compilation of "
      "\"k.cu\".\nCompilation terminated.\n";
  EXPECT_TRUE(take_pch_lines(refused).refused);
  std::string ordinary =
      "\"k.cu\": using precompiled header file \"/p/k_0.pch\"\n"
      "k.cu(2): error: identifier \"x\" is undefined\n\n1 error detected in the compilation of \"k.cu\".\n";
  const PchLog pch = take_pch_lines(ordinary);
  EXPECT_FALSE(pch.refused);
  EXPECT_EQ(pch.used.size(), 1u);
  EXPECT_EQ(ordinary, "k.cu(2): error: identifier \"x\" is undefined\n\n1 error detected in the compilation of \"k.cu\".\n");
}

}  // namespace
}  // namespace kjit
