// scan_include_directives: which #include lines count, and where their names
// are, since the resolver rewrites names in place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "include_resolver.h"

namespace kjit {
namespace {

std::vector<std::string> targets_of(std::string_view text) {
  std::vector<std::string> targets;
  for (const IncludeDirective& directive : scan_include_directives(text)) targets.push_back(directive.target);
  return targets;
}

TEST(IncludeDirectiveScan, FindsQuotedAndAngledIncludesWithWhitespaceVariants) {
  const std::string text =
      "#include \"a.h\"\n"
      "#  include <b.h>\n"
      "\t#\tinclude\t\"c.h\"\n"
      "   # /* note */ include /* note */ <d/e.h>\n"
      "#include\"f.h\"\n"
      "#include <g.h> // trailing comment\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 6u);
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"a.h", "b.h", "c.h", "d/e.h", "f.h", "g.h"}));
  EXPECT_FALSE(found[0].angled);
  EXPECT_TRUE(found[1].angled);
  EXPECT_FALSE(found[2].angled);
  EXPECT_TRUE(found[3].angled);
  for (const IncludeDirective& directive : found) EXPECT_FALSE(directive.computed);
}

TEST(IncludeDirectiveScan, RecordsLineAndOffsetOfTheName) {
  const std::string text = "// header\n\nint x;\n  #include \"dir/name.h\"\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 4u);
  EXPECT_EQ(text.substr(found[0].target_offset, found[0].target.size()), "dir/name.h");
}

TEST(IncludeDirectiveScan, SkipsIncludesInCommentsAndLiterals) {
  const std::string text =
      "// #include \"line_comment.h\"\n"
      "/* #include \"block.h\"\n"
      "#include \"inside_block.h\"\n"
      "*/\n"
      "const char* s = \"#include \\\"string.h\\\"\";\n"
      "const char* r = R\"x(\n"
      "#include \"raw_string.h\"\n"
      ")x\";\n"
      "const char* u = u8R\"(\n"
      "#include \"raw_u8.h\"\n"
      ")\";\n"
      "#include \"real.h\"\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"real.h"}));
}

TEST(IncludeDirectiveScan, IncludeMustStartTheLine) {
  EXPECT_TRUE(targets_of("int x; #include \"no.h\"\n").empty());
  EXPECT_TRUE(targets_of("#define INC #include \"no.h\"\n").empty());
}

TEST(IncludeDirectiveScan, SplicedLineCommentHidesTheNextLine) {
  const std::string text =
      "// a comment that goes on \\\n"
      "#include \"hidden.h\"\n"
      "#include \"shown.h\"\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"shown.h"}));
}

TEST(IncludeDirectiveScan, SplicedDirectiveIsFound) {
  const std::string text = "#include \\\n  \"spliced.h\"\n#include \"next.h\"\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].target, "spliced.h");
  EXPECT_EQ(found[0].line, 1u);
  EXPECT_EQ(found[1].line, 3u);
}

TEST(IncludeDirectiveScan, ApostrophesDoNotHideLaterIncludes) {
  const std::string text =
      "constexpr int big = 1'000'000;\n"
      "#if 0\n"
      "  this part isn't code, and it doesn't close its quotes\n"
      "#endif\n"
      "#error don't\n"
      "#include \"after.h\"\n"
      "char c = '\"';\n"
      "#include \"after_char.h\"\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"after.h", "after_char.h"}));
}

TEST(IncludeDirectiveScan, IncludesUnderAnyConditionalBranchAreFound) {
  const std::string text =
      "#if 0\n"
      "#include \"disabled.h\"\n"
      "#else\n"
      "#include \"enabled.h\"\n"
      "#endif\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"disabled.h", "enabled.h"}));
}

TEST(IncludeDirectiveScan, ComputedIncludeIsReportedNotFollowed) {
  const std::vector<IncludeDirective> found = scan_include_directives("#include CONFIG_HEADER // chosen by -D\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].computed);
  EXPECT_EQ(found[0].target, "CONFIG_HEADER");
}

TEST(IncludeDirectiveScan, MalformedIncludesAreIgnored) {
  EXPECT_TRUE(targets_of("#include \"unterminated.h\n#include\n#include <also\n").empty());
  EXPECT_EQ(targets_of("#include \"unterminated.h\n#include \"fine.h\"\n"), (std::vector<std::string>{"fine.h"}));
}

TEST(IncludeDirectiveScan, OtherDirectivesAreNotIncludes) {
  EXPECT_TRUE(targets_of("#include_next <x.h>\n#pragma include \"y.h\"\n#define include \"z.h\"\n").empty());
}

TEST(IncludeDirectiveScan, CrlfLineEndingsWork) {
  const std::string text = "#include \"a.h\"\r\n// #include \"b.h\"\r\n#include <c.h>\r\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"a.h", "c.h"}));
}

}  // namespace
}  // namespace kjit
