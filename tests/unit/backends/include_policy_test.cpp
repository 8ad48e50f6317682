#include <gtest/gtest.h>

#include "backends/nvrtc/include_policy.h"

namespace kjit {
namespace {

TEST(IncludePolicy, RelativeIncludesPass) {
  EXPECT_TRUE(check_include_directives("#include \"a/b.h\"\n#include <cuda_fp16.h>\n  #  include <x/y/z.h>\n", "k.cu"));
}

TEST(IncludePolicy, AbsoluteAndParentIncludesAreRefusedWithFileAndLine) {
  auto s = check_include_directives("// ok\n#include \"/etc/passwd\"\n", "k.cu");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("k.cu:2"), std::string::npos) << s.error().message;
  EXPECT_FALSE(check_include_directives("#include <../secret.h>\n", "k.cu"));
  EXPECT_FALSE(check_include_directives("#include \"a/../../b.h\"\n", "k.cu"));
  EXPECT_FALSE(check_include_directives("#\tinclude_next </etc/x>\n", "k.cu"));
}

TEST(IncludePolicy, ComputedIncludesAreRefused) {
  EXPECT_FALSE(check_include_directives("#define H \"/etc/passwd\"\n#include H\n", "k.cu"));
}

TEST(IncludePolicy, IncludesInsideCommentsAreIgnored) {
  EXPECT_TRUE(check_include_directives("// #include \"/etc/passwd\"\n/*\n#include \"/etc/passwd\"\n*/\n", "k.cu"));
  EXPECT_TRUE(check_include_directives("int x; /* start\n#include </etc/passwd>\nend */\n", "k.cu"));
}

TEST(IncludePolicy, HeaderNamesAndContentsAreChecked) {
  EXPECT_FALSE(check_include_policy("", "k.cu", {{"/abs.h", ""}}));
  EXPECT_FALSE(check_include_policy("", "k.cu", {{"../up.h", ""}}));
  auto s = check_include_policy("#include \"in.h\"\n", "k.cu", {{"in.h", "#include \"/etc/shadow\"\n"}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("in.h:1"), std::string::npos);
  EXPECT_TRUE(check_include_policy("#include \"in.h\"\n", "k.cu", {{"in.h", "int x;\n"}}));
}

}  // namespace
}  // namespace kjit
