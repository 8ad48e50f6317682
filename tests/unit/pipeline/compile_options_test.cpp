#include <gtest/gtest.h>

#include "pipeline/compile_options.h"

namespace kjit {
namespace {

using Options = std::vector<std::string>;

TEST(CompileOptions, DefinesAndLanguageOptionsGoToNvrtcOnly) {
  auto r = check_options(InputKind::cuda_source, {"-DN=4", "--define-macro=M", "-std=c++17", "--use_fast_math"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->normalized, (Options{"-DN=4", "-DM", "-std=c++17", "-use_fast_math"}));
  EXPECT_EQ(r->nvrtc, r->normalized);
  EXPECT_TRUE(r->nvjitlink.empty());
}

TEST(CompileOptions, NormalizedOptionsCheckToThemselves) {
  // "--define-macro==N" once became "-D=N", which a second check (the
  // NVRTC stage's) read as "-DN": the key and the compile disagreed.
  for (const char* option : {"--define-macro==N", "--undefine-macro==X", "-D==", "-D1X", "-U-"}) {
    auto r = check_options(InputKind::cuda_source, {option});
    ASSERT_FALSE(r) << option << " was accepted";
    EXPECT_NE(r.error().message.find("macro name"), std::string::npos) << r.error().message;
  }
  auto r = check_options(InputKind::cuda_source, {"-D=N", "-D_X=1", "--undefine-macro=Y"});
  ASSERT_TRUE(r) << r.error().message;
  auto again = check_options(InputKind::cuda_source, r->normalized);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->normalized, r->normalized);
}

TEST(CompileOptions, CodegenOptionsReachBothStagesInEachOnesSpelling) {
  auto r = check_options(InputKind::cuda_source, {"-lineinfo", "-G", "--maxrregcount=64", "-Xptxas=-v"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->nvrtc, (Options{"-lineinfo", "-G", "-maxrregcount=64"}));
  EXPECT_EQ(r->nvjitlink, (Options{"-lineinfo", "-g", "-maxrregcount=64", "-Xptxas=-v"}));
}

TEST(CompileOptions, FileReadingOptionsAreRefusedWithTheReason) {
  for (const char* option : {"-I/etc", "-I", "--include-path=/x", "-include", "--pre-include=/etc/passwd",
                             "--use-pch=/x", "--pch-dir=/x", "--create-pch=/x", "--time=/x", "--fdevice-time-trace=/x"}) {
    auto r = check_options(InputKind::cuda_source, {option});
    ASSERT_FALSE(r) << option;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find(option), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("files"), std::string::npos) << r.error().message;
  }
}

TEST(CompileOptions, ArchitectureOptionPointsAtTheTargetField) {
  auto r = check_options(InputKind::cuda_source, {"-arch=sm_80"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("target"), std::string::npos);
}

TEST(CompileOptions, UnknownOptionsAreRefusedListingTheAllowedOnes) {
  auto r = check_options(InputKind::cuda_source, {"--frobnicate"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("allowlist"), std::string::npos);
  EXPECT_NE(r.error().message.find("-lineinfo"), std::string::npos);
}

TEST(CompileOptions, ValuesAreChecked) {
  EXPECT_FALSE(check_options(InputKind::cuda_source, {"-maxrregcount=lots"}));
  EXPECT_FALSE(check_options(InputKind::cuda_source, {"-std=c++99"}));
  EXPECT_FALSE(check_options(InputKind::cuda_source, {"-Xptxas=--output-file=/tmp/x"}));
  EXPECT_FALSE(check_options(InputKind::cuda_source, {"-D"}));
  EXPECT_FALSE(check_options(InputKind::cuda_source, {"-O7"}));
  EXPECT_TRUE(check_options(InputKind::cuda_source, {"-O3"}));
}

TEST(CompileOptions, SourceOnlyOptionsOnPtxInputAreRefused) {
  auto r = check_options(InputKind::ptx, {"-DN=1"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no effect on ptx input"), std::string::npos) << r.error().message;
  auto ok = check_options(InputKind::ptx, {"-lineinfo", "-maxrregcount=32"});
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->nvrtc.empty());
  EXPECT_EQ(ok->nvjitlink, (Options{"-lineinfo", "-maxrregcount=32"}));
}

}  // namespace
}  // namespace kjit
