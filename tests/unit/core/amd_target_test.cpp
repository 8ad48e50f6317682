// hip: targets and the AMD architecture table.
#include <gtest/gtest.h>

#include "target/amd_archs.h"
#include "target/target.h"

namespace kjit {
namespace {

TEST(AmdTarget, ParsesHipSpellingsAndTheBareProcessor) {
  for (const char* text : {"hip:gfx90a", "gfx90a"}) {
    Result<Target> target = parse_target(text);
    ASSERT_TRUE(target) << text << ": " << target.error().message;
    EXPECT_TRUE(target->is_amd());
    EXPECT_EQ(target->processor, "gfx90a");
    EXPECT_EQ(target->canonical(), "hip:gfx90a");
    EXPECT_EQ(target->amd_arch().family, "CDNA2 (MI200)");
  }
  EXPECT_FALSE(parse_target("cuda:90")->is_amd());
}

TEST(AmdTarget, UnknownOrMalformedProcessorsAreRefusedNamingTheKnownOnes) {
  for (const char* text : {"hip:gfx9999", "hip:", "hip:gfx90a:xnack-", "hip:GFX90A", "gfx", "hip:sm_90"}) {
    Result<Target> target = parse_target(text);
    ASSERT_FALSE(target) << text;
    EXPECT_EQ(target.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(target.error().message.find("hip:gfx942"), std::string::npos) << target.error().message;
  }
}

TEST(AmdTarget, TheTableHasTheProcessorsLlvm19BuildsWithTheirLimits) {
  for (const char* processor : {"gfx90a", "gfx942", "gfx1100", "gfx1200"}) {
    const AmdArchInfo* arch = find_amd_arch(processor);
    ASSERT_NE(arch, nullptr) << processor;
    EXPECT_EQ(arch->lds_per_workgroup, 65536u) << processor;
    EXPECT_EQ(arch->max_workgroup_size, 1024u) << processor;
  }
  EXPECT_EQ(find_amd_arch("gfx90a")->default_wavefront, 64u);
  EXPECT_FALSE(find_amd_arch("gfx942")->wavefront_64_selectable);
  EXPECT_EQ(find_amd_arch("gfx1100")->default_wavefront, 32u);
  EXPECT_TRUE(find_amd_arch("gfx1100")->wavefront_64_selectable);
  // CDNA4: a target for Triton IR only (LLVM 19 cannot build it), with 160 KiB of LDS.
  ASSERT_NE(find_amd_arch("gfx950"), nullptr);
  EXPECT_FALSE(find_amd_arch("gfx950")->llvm19_builds);
  EXPECT_EQ(find_amd_arch("gfx950")->lds_per_workgroup, 160u * 1024);
  EXPECT_TRUE(find_amd_arch("gfx942")->llvm19_builds);
}

TEST(AmdTarget, HiprtcVersionsDecideWhichProcessorsItBuilds) {
  // Measured: ROCm 5.2's HIPRTC builds gfx90a, gfx908 and gfx1030 and
  // aborts on gfx94x and gfx11xx.
  const std::string rocm52 = "5.2.21153";
  EXPECT_TRUE(hiprtc_builds(*find_amd_arch("gfx90a"), rocm52));
  EXPECT_TRUE(hiprtc_builds(*find_amd_arch("gfx908"), rocm52));
  EXPECT_TRUE(hiprtc_builds(*find_amd_arch("gfx1030"), rocm52));
  EXPECT_FALSE(hiprtc_builds(*find_amd_arch("gfx942"), rocm52));
  EXPECT_FALSE(hiprtc_builds(*find_amd_arch("gfx1100"), rocm52));
  EXPECT_TRUE(hiprtc_builds(*find_amd_arch("gfx942"), "6.2.4"));
  EXPECT_TRUE(hiprtc_builds(*find_amd_arch("gfx1100"), "5.10"));  // numeric, not textual
  EXPECT_FALSE(hiprtc_builds(*find_amd_arch("gfx90a"), "5.1"));
  EXPECT_FALSE(hiprtc_builds(*find_amd_arch("gfx90a"), "unknown"));
  std::string listed = describe_hiprtc_targets(rocm52);
  EXPECT_NE(listed.find("hip:gfx90a"), std::string::npos);
  EXPECT_EQ(listed.find("hip:gfx942"), std::string::npos);
  EXPECT_EQ(describe_hiprtc_targets("1.0"), "none");
}

}  // namespace
}  // namespace kjit
