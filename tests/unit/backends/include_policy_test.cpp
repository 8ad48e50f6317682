// The daemon's include policy: which directives and names a request may hold,
// and what the refusal says.
#include "backends/nvrtc/include_policy.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "support/hostile_includes.h"

namespace kjit {
namespace {

bool mentions(const Status& status, std::string_view text) {
  return !status && status.error().message.find(text) != std::string::npos;
}

// Each of `sources`, alone in k.cu, is refused.
void expect_each_refused(std::initializer_list<std::string_view> sources) {
  for (std::string_view source : sources) EXPECT_FALSE(check_include_directives(source, "k.cu")) << source;
}

TEST(IncludePolicy, RelativeIncludesPass) {
  EXPECT_TRUE(check_include_directives("#include \"a/b.h\"\n#include <cuda_fp16.h>\n  #  include <x/y/z.h>\n", "k.cu"));
  EXPECT_TRUE(check_include_directives("#include_next <cuda/std/cstdint>\n#include \"./dots..in..name.h\"\n", "k.cu"));
}

// What real kernels contain: the policy must not refuse it.
TEST(IncludePolicy, OrdinarySourcePasses) {
  const std::string source =
      "#include <cuda_fp16.h>\r\n"
      "#include \"config/params.h\"\r\n"
      "#if defined(__has_include)\r\n"
      "#  if __has_include(<cuda/std/span>) && __has_include(\"local.h\")\r\n"
      "#    include <cuda/std/span>\r\n"
      "#  endif\r\n"
      "#endif\r\n"
      "#ifdef __has_include\r\n"
      "#endif\r\n"
      "// A comment that says #include \"/etc/passwd\" is fine.\r\n"
      "__device__ const char k_message[] = \"what?? #include </etc/passwd>\";\r\n"
      "__device__ const int k_big = 1'000'000;\r\n"
      "template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\r\n";
  const Status status = check_include_directives(source, "k.cu");
  EXPECT_TRUE(status) << status.error().message;
}

TEST(IncludePolicy, AbsoluteAndParentIncludesAreRefusedWithFileAndLine) {
  auto s = check_include_directives("// ok\n#include \"/etc/passwd\"\n", "k.cu");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_TRUE(mentions(s, "k.cu:2: '#include \"/etc/passwd\"' is refused")) << s.error().message;
  expect_each_refused({"#include <../secret.h>\n", "#include \"a/../../b.h\"\n", "#include \"a\\..\\b.h\"\n",
                       "#include \"C:/x.h\"\n", "#include \"\\\\server\\x.h\"\n", "#\tinclude_next </etc/x>\n",
                       "#import \"/etc/x\"\n"});
}

TEST(IncludePolicy, SplicedDirectiveIsRefusedAtTheLineItStarts) {
  const Status s = check_include_directives("int x;\n#inc\\\nlude \"/et\\\nc/passwd\"\n", "k.cu");
  EXPECT_TRUE(mentions(s, "k.cu:2: '#include \"/etc/passwd\"'")) << (s ? "" : s.error().message);
}

TEST(IncludePolicy, ComputedIncludesAreRefused) {
  const Status s = check_include_directives("#define H \"/etc/passwd\"\n#include H\n", "k.cu");
  EXPECT_TRUE(mentions(s, "k.cu:2: '#include H' is refused: computed")) << (s ? "" : s.error().message);
  expect_each_refused({"#define H \"a.h\"\n#include_next H\n", "#include \"unterminated.h\n"});
}

TEST(IncludePolicy, IncludesInsideCommentsAreIgnored) {
  EXPECT_TRUE(check_include_directives("// #include \"/etc/passwd\"\n/*\n#include \"/etc/passwd\"\n*/\n", "k.cu"));
  EXPECT_TRUE(check_include_directives("int x; /* start\n#include </etc/passwd>\nend */\n", "k.cu"));
}

// The old line scanner missed these; each is an include NVRTC honours.
TEST(IncludePolicy, SpellingsALineScannerMissesAreRefused) {
  expect_each_refused({"%:include \"/etc/passwd\"\n", "#inc\\\nlude \"/etc/passwd\"\n",
                       "# /* c */ include \"/etc/passwd\"\n", "int x; /*\n*/ #include \"/etc/passwd\"\n",
                       "// note \\ \n#include \"/etc/passwd\"\n"});
}

TEST(IncludePolicy, HasIncludeOfARefusedNameIsRefused) {
  const Status s = check_include_directives("#if __has_include(\"/etc/shadow\")\n#endif\n", "k.cu");
  EXPECT_TRUE(mentions(s, "k.cu:1: '__has_include \"/etc/shadow\"' is refused")) << (s ? "" : s.error().message);
  expect_each_refused({"#if __has_include_next(<../x.h>)\n#endif\n",
                       "constexpr bool b = __has_include(</etc/passwd>);\n",
                       "#define P \"/etc/passwd\"\n#if __has_include(P)\n#endif\n",
                       "#define H __has_include\n#if H(\"/etc/passwd\")\n#endif\n"});
  EXPECT_TRUE(
      check_include_directives("#if __has_include(<cuda_fp16.h>) || __has_include(\"a/b.h\")\n#endif\n", "k.cu"));
}

TEST(IncludePolicy, ControlCharactersInANameAreEscapedInTheMessage) {
  const Status s = check_include_directives("#include \"/etc/\x1b[2Jpasswd\"\n", "k.cu");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message.find('\x1b'), std::string::npos);
  EXPECT_TRUE(mentions(s, "/etc/\\x1b[2Jpasswd")) << s.error().message;
}

TEST(IncludePolicy, HeaderNamesAndContentsAreChecked) {
  EXPECT_FALSE(check_include_policy("", "k.cu", {{"/abs.h", ""}}));
  EXPECT_FALSE(check_include_policy("", "k.cu", {{"../up.h", ""}}));
  EXPECT_FALSE(check_include_policy("", "k.cu", {{"a\\..\\up.h", ""}}));
  EXPECT_FALSE(check_include_policy("", "k.cu", {{"", ""}}));
  auto s = check_include_policy("#include \"in.h\"\n", "k.cu", {{"in.h", "#include \"/etc/shadow\"\n"}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("in.h:1"), std::string::npos);
  EXPECT_TRUE(check_include_policy("#include \"in.h\"\n", "k.cu", {{"in.h", "int x;\n"}}));
}

TEST(IncludePolicy, HeaderNamesAreRefusedBeforeAnyDirective) {
  const Status s = check_include_policy("#include \"/etc/passwd\"\n", "k.cu", {{"z/../../up.h", ""}});
  EXPECT_TRUE(mentions(s, "header name 'z/../../up.h' is refused")) << (s ? "" : s.error().message);
}

// NVRTC looks for a quoted include next to the file that holds it, the main
// source included (checked: a source named /tmp/d/k.cu that includes
// "secret.h" reads /tmp/d/secret.h).
TEST(IncludePolicy, AbsoluteOrClimbingSourceNameIsRefused) {
  EXPECT_TRUE(mentions(check_include_policy("", "/tmp/k.cu", {}), "source name '/tmp/k.cu' is refused"));
  EXPECT_FALSE(check_include_policy("", "../../k.cu", {}));
  EXPECT_TRUE(check_include_policy("", "dir/k.cu", {}));
  EXPECT_TRUE(check_include_policy("", "", {}));
}

TEST(IncludePolicy, EveryHostileSpellingIsRefused) {
  ASSERT_FALSE(test::hostile_includes().empty());
  for (const test::HostileInclude& hostile : test::hostile_includes()) {
    for (const char* path : {"/etc/passwd", "/proc/self/environ"}) {
      const std::string source = test::instantiate(hostile.source_template, path);
      const Status as_source = check_include_policy(source, "k.cu", {});
      ASSERT_FALSE(as_source) << hostile.name << " with " << path;
      EXPECT_EQ(as_source.error().code, ErrorCode::invalid_argument) << hostile.name;
      EXPECT_NE(as_source.error().message.find("k.cu:"), std::string::npos) << as_source.error().message;
      const Status as_header = check_include_policy("#include \"h.h\"\n", "k.cu", {{"h.h", source}});
      ASSERT_FALSE(as_header) << hostile.name << " with " << path;
      EXPECT_NE(as_header.error().message.find("h.h:"), std::string::npos) << as_header.error().message;
    }
  }
}

// The same kernels with a harmless relative name must pass where they hold
// a literal name: the refusals above come from the path, not the spelling.
TEST(IncludePolicy, HostileSpellingsOfARelativeNameAreNotAllRefused) {
  int passed = 0;
  for (const test::HostileInclude& hostile : test::hostile_includes()) {
    if (check_include_policy(test::instantiate(hostile.source_template, "sub/ok.h"), "k.cu", {})) ++passed;
  }
  EXPECT_GE(passed, 40);
}

TEST(IncludePolicy, RefusalsNameFilesWithoutRawControlCharacters) {
  // A header named with a newline must not forge a line in the daemon's log.
  auto refused = check_include_policy("#include \"ok.h\"\n", "k.cu",
                                      {{"ok.h", "int x;\n"}, {"evil\nFAKE LOG LINE.h", "#include \"/etc/passwd\"\n"}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message.find('\n'), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("evil\\x0aFAKE LOG LINE.h"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace kjit
