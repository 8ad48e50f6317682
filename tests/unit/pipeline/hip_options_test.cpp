// The option allowlist for hip: targets.
#include <gtest/gtest.h>

#include "pipeline/hip_options.h"

namespace kjit {
namespace {

const AmdArchInfo& cdna2() { return *find_amd_arch("gfx90a"); }
const AmdArchInfo& rdna3() { return *find_amd_arch("gfx1100"); }

TEST(HipOptions, HipSourceOptionsPassToHiprtc) {
  Result<HipOptions> checked = check_hip_options(
      InputKind::hip_source, {"-DN=4", "-std=c++17", "-O2", "-ffast-math", "-mcode-object-version=5"}, cdna2());
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ(checked->hiprtc.size(), 5u);
  EXPECT_EQ(checked->code_object_version, 5u);
}

TEST(HipOptions, LlvmIrTakesTheCodeObjectVersionAndWaveSize) {
  Result<HipOptions> checked =
      check_hip_options(InputKind::llvm_ir, {"-mcode-object-version=6", "-mwavefrontsize64"}, rdna3());
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ(checked->code_object_version, 6u);
  EXPECT_EQ(checked->llvm_features(), "+wavefrontsize64");
  EXPECT_TRUE(checked->hiprtc.empty());
  // GCN and CDNA run wave64 only: asking for it is a no-op, refusing it an error.
  Result<HipOptions> cdna = check_hip_options(InputKind::llvm_ir, {"-mwavefrontsize64"}, cdna2());
  ASSERT_TRUE(cdna);
  EXPECT_EQ(cdna->llvm_features(), "");
  EXPECT_FALSE(check_hip_options(InputKind::llvm_ir, {"-mno-wavefrontsize64"}, cdna2()));
}

TEST(HipOptions, RefusedOptionsSayWhy) {
  struct Case {
    InputKind input;
    const char* option;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {InputKind::hip_source, "-I/etc", "allowlist"},
           {InputKind::hip_source, "--offload-arch=gfx942", "allowlist"},
           {InputKind::hip_source, "-mcode-object-version=6", "4 or 5"},
           {InputKind::hip_source, "-std=gnu++17", "language standard"},
           {InputKind::hip_source, "-D1X", "macro name"},
           {InputKind::hip_source, "-O9", "-O0 to -O3"},
           {InputKind::llvm_ir, "-DN=1", "llvm-passes.pipeline"},
           {InputKind::llvm_ir, "-mcode-object-version=3", "4, 5 or 6"},
           {InputKind::ptx, "-O3", "does not build for hip: targets"},
       }) {
    Result<HipOptions> checked = check_hip_options(c.input, {c.option}, cdna2());
    ASSERT_FALSE(checked) << c.option;
    EXPECT_EQ(checked.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(checked.error().message.find(c.why), std::string::npos) << c.option << ": " << checked.error().message;
  }
}

}  // namespace
}  // namespace kjit
