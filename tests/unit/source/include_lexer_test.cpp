// scan_include_directives: which directives count, where their names are (the
// client rewrites names in place), and that no dialect NVRTC reads a text in
// can hide a directive from the union of readings.
#include "source/include_lexer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/hostile_includes.h"

namespace kjit {
namespace {

using Kind = IncludeDirective::Kind;

std::vector<std::string> targets_of(std::string_view text) {
  std::vector<std::string> targets;
  for (const IncludeDirective& directive : scan_include_directives(text)) targets.push_back(directive.target);
  return targets;
}

std::vector<std::string> targets_of(std::string_view text, const IncludeScanDialect& dialect) {
  std::vector<std::string> targets;
  for (const IncludeDirective& directive : scan_include_directives_in_dialect(text, dialect))
    targets.push_back(directive.target);
  return targets;
}

IncludeScanDialect cxx14() {
  IncludeScanDialect dialect;
  dialect.trigraphs = true;
  return dialect;
}

IncludeScanDialect cxx11() {
  IncludeScanDialect dialect = cxx14();
  dialect.digit_separators = false;
  return dialect;
}

IncludeScanDialect cxx03() {
  IncludeScanDialect dialect = cxx11();
  dialect.raw_strings = false;
  return dialect;
}

IncludeScanDialect gnu() {
  IncludeScanDialect dialect;
  dialect.gnu_lines = true;
  return dialect;
}

// The original text of a name with its splices (backslash, optional CR, LF)
// taken out.
std::string without_splices(std::string_view span) {
  std::string out;
  for (std::size_t i = 0; i < span.size(); ++i) {
    if (span[i] == '\\' && i + 1 < span.size() && span[i + 1] == '\n') {
      ++i;
    } else if (span[i] == '\\' && i + 2 < span.size() && span[i + 1] == '\r' && span[i + 2] == '\n') {
      i += 2;
    } else {
      out += span[i];
    }
  }
  return out;
}

TEST(IncludeLexer, FindsQuotedAndAngledIncludesWithWhitespaceVariants) {
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
  for (const IncludeDirective& directive : found) {
    EXPECT_FALSE(directive.computed);
    EXPECT_EQ(directive.kind, Kind::include);
  }
}

TEST(IncludeLexer, RecordsLineOffsetAndLengthOfTheName) {
  const std::string text = "// header\n\nint x;\n  #include \"dir/name.h\"\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 4u);
  EXPECT_EQ(found[0].target_length, 10u);
  EXPECT_EQ(text.substr(found[0].target_offset, found[0].target_length), "dir/name.h");
}

TEST(IncludeLexer, SkipsIncludesInCommentsAndLiterals) {
  const std::string text =
      "// #include \"line_comment.h\"\n"
      "/* #include \"block.h\"\n"
      "#include \"inside_block.h\"\n"
      "*/\n"
      "const char* s = \"#include \\\"string.h\\\"\";\n"
      "const char c = '#';\n"
      "#include \"real.h\"\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"real.h"}));
}

// From C++11 on a raw string hides what it holds, whatever its prefix; NVRTC
// in C++03 has no raw strings, so the union reports the include.
TEST(IncludeLexer, RawStringsHideIncludesFromCxx11OnOnly) {
  const std::string text =
      "const char* r = R\"x(\n"
      "#include \"raw_string.h\"\n"
      ")x\";\n"
      "const char* u = u8R\"(\n"
      "#include \"raw_u8.h\"\n"
      ")\";\n"
      "const wchar_t* l = LR\"d(\n"
      "#include \"raw_wide.h\"\n"
      ")d\";\n"
      "#include \"real.h\"\n";
  EXPECT_EQ(targets_of(text, IncludeScanDialect{}), (std::vector<std::string>{"real.h"}));
  EXPECT_EQ(targets_of(text, cxx11()), (std::vector<std::string>{"real.h"}));
  EXPECT_EQ(targets_of(text, cxx03()), (std::vector<std::string>{"raw_string.h", "raw_u8.h", "raw_wide.h", "real.h"}));
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"raw_string.h", "raw_u8.h", "raw_wide.h", "real.h"}));
}

TEST(IncludeLexer, RawStringDelimiterMustMatch) {
  const std::string text =
      "const char* r = R\"ab(\n"
      ")a\"\n"
      "#include \"hidden.h\"\n"
      ")ab\";\n"
      "#include \"after.h\"\n";
  EXPECT_EQ(targets_of(text, IncludeScanDialect{}), (std::vector<std::string>{"after.h"}));
}

TEST(IncludeLexer, IncludeMustStartTheLine) {
  EXPECT_TRUE(targets_of("int x; #include \"no.h\"\n").empty());
  EXPECT_TRUE(targets_of("#define INC #include \"no.h\"\n").empty());
  EXPECT_TRUE(targets_of("int x; /* one line */ #include \"no.h\"\n").empty());
}

// NVRTC takes `int x; /*<newline>*/ #include` for a directive.
TEST(IncludeLexer, NewlineInsideACommentStartsALine) {
  EXPECT_EQ(targets_of("int x; /*\n*/ #include \"yes.h\"\n"), (std::vector<std::string>{"yes.h"}));
}

TEST(IncludeLexer, SplicedLineCommentHidesTheNextLine) {
  const std::string text =
      "// a comment that goes on \\\n"
      "#include \"hidden.h\"\n"
      "#include \"shown.h\"\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"shown.h"}));
}

TEST(IncludeLexer, SplicedDirectiveIsFound) {
  const std::string text = "#include \\\n  \"spliced.h\"\n#include \"next.h\"\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].target, "spliced.h");
  EXPECT_EQ(found[0].line, 1u);
  EXPECT_EQ(found[1].line, 3u);
}

TEST(IncludeLexer, SplicesAnywhereInTheDirective) {
  EXPECT_EQ(targets_of("#inc\\\nlude \"a.h\"\n"), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of("#\\\ninclude \"b.h\"\n"), (std::vector<std::string>{"b.h"}));
  EXPECT_EQ(targets_of("\\\n#include \"c.h\"\n"), (std::vector<std::string>{"c.h"}));
  EXPECT_EQ(targets_of("%\\\n:include \"d.h\"\n"), (std::vector<std::string>{"d.h"}));
  EXPECT_EQ(targets_of("#inc\\\r\nlude \"e.h\"\r\n"), (std::vector<std::string>{"e.h"}));
}

TEST(IncludeLexer, SplicedNameIsReportedWholeWithItsOriginalSpan) {
  const std::string text = "#include \"\\\ndir/\\\nname.h\\\n\"\nint x;\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].target, "dir/name.h");
  EXPECT_EQ(found[0].line, 1u);
  // From the first character of the name to its last, splices inside
  // included.
  EXPECT_EQ(text.substr(found[0].target_offset, found[0].target_length), "dir/\\\nname.h");
}

TEST(IncludeLexer, SplicedCommentDelimiters) {
  EXPECT_EQ(targets_of("/\\\n* c *\\\n/ #include \"a.h\"\n"), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of("/* c *\\\n/ #include \"b.h\"\n"), (std::vector<std::string>{"b.h"}));
}

TEST(IncludeLexer, DigraphHashStartsADirective) {
  EXPECT_EQ(targets_of("%:include \"a.h\"\n %: include <b.h>\n"), (std::vector<std::string>{"a.h", "b.h"}));
}

TEST(IncludeLexer, PastedHashBeforeIncludeIsComputed) {
  for (const char* text : {"%:%:include \"a.h\"\n", "##include \"a.h\"\n"}) {
    const std::vector<IncludeDirective> found = scan_include_directives(text);
    ASSERT_EQ(found.size(), 1u) << text;
    EXPECT_TRUE(found[0].computed) << text;
  }
}

// Trigraphs are honoured up to C++14: they can make a directive, and a ?\?/
// at a comment's end can hide one from C++14 but not from C++17.
TEST(IncludeLexer, TrigraphsAreReadBothWays) {
  const std::string hash = "?\?=include \"a.h\"\n";
  EXPECT_TRUE(targets_of(hash, IncludeScanDialect{}).empty());
  EXPECT_EQ(targets_of(hash, cxx14()), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of(hash), (std::vector<std::string>{"a.h"}));

  const std::string comment = "// note ?\?/\n#include \"b.h\"\n";
  EXPECT_TRUE(targets_of(comment, cxx14()).empty());
  EXPECT_EQ(targets_of(comment, IncludeScanDialect{}), (std::vector<std::string>{"b.h"}));
  EXPECT_EQ(targets_of(comment), (std::vector<std::string>{"b.h"}));

  EXPECT_EQ(targets_of("#inc?\?/\nlude \"c.h\"\n"), (std::vector<std::string>{"c.h"}));
}

// `1'a/*'` is a number then a comment from C++14 on, a 1 and a character
// literal before.
TEST(IncludeLexer, DigitSeparatorsAreReadBothWays) {
  const std::string text = "int x = 1'a/*';\n#include \"a.h\"\n// */\n";
  EXPECT_TRUE(targets_of(text, IncludeScanDialect{}).empty());
  EXPECT_EQ(targets_of(text, cxx11()), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"a.h"}));
}

// EDG: a lone CR is a space and a byte order mark an unknown token; GCC: a
// line end and nothing. The union reports what either would take.
TEST(IncludeLexer, LoneCrAndByteOrderMarkAreReadBothWays) {
  const std::string cr = "int a;\r#include \"a.h\"\r";
  EXPECT_TRUE(targets_of(cr, IncludeScanDialect{}).empty());
  EXPECT_EQ(targets_of(cr, gnu()), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of(cr), (std::vector<std::string>{"a.h"}));

  const std::string bom = "\xEF\xBB\xBF#include \"b.h\"\n";
  EXPECT_TRUE(targets_of(bom, IncludeScanDialect{}).empty());
  EXPECT_EQ(targets_of(bom), (std::vector<std::string>{"b.h"}));
}

// EDG does not splice a backslash followed by spaces, GCC does.
TEST(IncludeLexer, BackslashSpaceNewlineIsReadBothWays) {
  const std::string comment = "// note \\ \n#include \"a.h\"\n";
  EXPECT_TRUE(targets_of(comment, gnu()).empty());
  EXPECT_EQ(targets_of(comment, IncludeScanDialect{}), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of(comment), (std::vector<std::string>{"a.h"}));

  EXPECT_EQ(targets_of("#inc\\ \t \nlude \"b.h\"\n"), (std::vector<std::string>{"b.h"}));
}

// A splice inside a raw string is reverted by GCC, not by EDG.
TEST(IncludeLexer, SpliceInARawStringIsReadBothWays) {
  const std::string text = "const char* s = R\"x(\n)x\\\n\"\n#include \"a.h\"\n// )x\"\n";
  EXPECT_EQ(targets_of(text, IncludeScanDialect{}), (std::vector<std::string>{"a.h"}));
  EXPECT_TRUE(targets_of(text, gnu()).empty());
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"a.h"}));
}

TEST(IncludeLexer, IdentifierEndingInRIsNoRawStringPrefix) {
  EXPECT_EQ(targets_of("auto s = xR\"(\n#include \"a.h\"\n)\";\n", IncludeScanDialect{}),
            (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of("auto s = x\\u00e9R\"(\n#include \"b.h\"\n)\";\n", IncludeScanDialect{}),
            (std::vector<std::string>{"b.h"}));
  EXPECT_EQ(
      targets_of("auto s = R\"12345678901234567(\n#include \"c.h\"\n)12345678901234567\";\n", IncludeScanDialect{}),
      (std::vector<std::string>{"c.h"}));
}

// In a group #if skips, NVRTC lexes an include's operand as tokens: a string
// literal with escapes, or a '<' then tokens.
TEST(IncludeLexer, OperandsAreAlsoReadAsTokens) {
  const std::string quoted = "#if 0\n#include \"a\\\" /* \"\n#endif\n#include \"b.h\"\n// */\n";
  EXPECT_EQ(targets_of(quoted, IncludeScanDialect{}), (std::vector<std::string>{"a\\"}));
  EXPECT_EQ(targets_of(quoted), (std::vector<std::string>{"a\\", "b.h"}));

  IncludeScanDialect tokens;
  tokens.header_names_as_tokens = true;
  const std::string angled = "#if __has_include(<x/*y.h>)\n#endif\n#include \"c.h\"\n// */\n";
  EXPECT_EQ(targets_of(angled, tokens), (std::vector<std::string>{"x/*y.h"}));
  EXPECT_EQ(targets_of(angled), (std::vector<std::string>{"x/*y.h", "c.h"}));
}

TEST(IncludeLexer, ApostrophesDoNotHideLaterIncludes) {
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

TEST(IncludeLexer, IncludesUnderAnyConditionalBranchAreFound) {
  const std::string text =
      "#if 0\n"
      "#include \"disabled.h\"\n"
      "#else\n"
      "#include \"enabled.h\"\n"
      "#endif\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"disabled.h", "enabled.h"}));
}

TEST(IncludeLexer, ComputedIncludeIsReportedWithItsTokens) {
  const std::string text = "#include CONFIG_HEADER // chosen by -D\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].computed);
  EXPECT_EQ(found[0].target, "CONFIG_HEADER");
  EXPECT_EQ(text.substr(found[0].target_offset, found[0].target_length), "CONFIG_HEADER");
}

// A compiler may still expand what follows (`#include <a GT` with GT
// defined as >), so nothing unterminated counts as a harmless typo.
TEST(IncludeLexer, MalformedIncludesAreComputed) {
  const std::vector<IncludeDirective> found =
      scan_include_directives("#include \"unterminated.h\n#include\n#include <also\n#include u8\"a.h\"\n");
  ASSERT_EQ(found.size(), 4u);
  for (const IncludeDirective& directive : found) EXPECT_TRUE(directive.computed) << directive.target;
  EXPECT_EQ(found[0].target, "\"unterminated.h");
  EXPECT_EQ(found[1].target, "");
  EXPECT_EQ(found[2].target, "<also");
  EXPECT_EQ(targets_of("#include \"unterminated.h\n#include \"fine.h\"\n"),
            (std::vector<std::string>{"\"unterminated.h", "fine.h"}));
}

TEST(IncludeLexer, DirectiveNameWithAUniversalCharacterNameIsComputed) {
  const std::vector<IncludeDirective> found = scan_include_directives("#\\u0069nclude \"a.h\"\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].computed);
  EXPECT_EQ(found[0].kind, Kind::include);
}

TEST(IncludeLexer, KindsOfDirective) {
  const std::vector<IncludeDirective> found = scan_include_directives(
      "#include_next <n.h>\n"
      "#import \"i.h\"\n"
      "import <unit.h>;\n"
      "export import \"exported.h\";\n"
      "#if __has_include(\"probe.h\") && __has_include_next(<next_probe.h>)\n"
      "#endif\n");
  ASSERT_EQ(found.size(), 6u);
  EXPECT_EQ(found[0].kind, Kind::include_next);
  EXPECT_EQ(found[1].kind, Kind::import);
  EXPECT_EQ(found[2].kind, Kind::import);
  EXPECT_TRUE(found[2].angled);
  EXPECT_EQ(found[3].kind, Kind::import);
  EXPECT_EQ(found[3].target, "exported.h");
  EXPECT_EQ(found[4].kind, Kind::has_include);
  EXPECT_EQ(found[4].target, "probe.h");
  EXPECT_FALSE(found[4].angled);
  EXPECT_EQ(found[4].line, 5u);
  EXPECT_EQ(found[5].kind, Kind::has_include);
  EXPECT_EQ(found[5].target, "next_probe.h");
  EXPECT_TRUE(found[5].angled);
}

TEST(IncludeLexer, OtherDirectivesAndModuleImportsAreNotIncludes) {
  EXPECT_TRUE(targets_of("#pragma include \"y.h\"\n#define include \"z.h\"\n#includes \"w.h\"\n").empty());
  EXPECT_TRUE(targets_of("import std;\nimport < y;\nbool b = x <\n  import > y;\n").empty());
}

// NVRTC evaluates __has_include in code and through macros as well as in
// #if; only naming the macro (defined, #ifdef) probes nothing.
TEST(IncludeLexer, HasIncludeAnywhere) {
  EXPECT_EQ(targets_of("constexpr bool b = __has_include(\"a.h\");\n"), (std::vector<std::string>{"a.h"}));
  EXPECT_EQ(targets_of("#define P __has_include( <b.h> )\n"), (std::vector<std::string>{"b.h"}));
  EXPECT_EQ(targets_of("#if __has_\\\ninclude(\"c.h\")\n#endif\n"), (std::vector<std::string>{"c.h"}));
  EXPECT_TRUE(targets_of("#if defined(__has_include)\n#elif defined __has_include_next\n#endif\n"
                         "#ifdef __has_include\n#endif\n#ifndef __has_include\n#endif\n")
                  .empty());
}

TEST(IncludeLexer, HasIncludeWithoutALiteralNameIsComputed) {
  for (const char* text : {"#if __has_include(HEADER)\n#endif\n", "#define H __has_include\n",
                           "#if __has_\\u0069nclude(\"a.h\")\n#endif\n"}) {
    const std::vector<IncludeDirective> found = scan_include_directives(text);
    ASSERT_EQ(found.size(), 1u) << text;
    EXPECT_EQ(found[0].kind, Kind::has_include) << text;
    EXPECT_TRUE(found[0].computed) << text;
  }
}

TEST(IncludeLexer, CrlfLineEndingsWork) {
  const std::string text = "#include \"a.h\"\r\n// #include \"b.h\"\r\n#include <c.h>\r\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"a.h", "c.h"}));
  EXPECT_EQ(scan_include_directives(text)[1].line, 3u);
}

TEST(IncludeLexer, EachDirectiveIsReportedOnceAcrossDialects) {
  const std::string text = "?\?=include \"a.h\"\n#include \"b.h\"\nint x = 1'0;\r\nR\"(x)\";\n";
  EXPECT_EQ(targets_of(text), (std::vector<std::string>{"a.h", "b.h"}));
}

TEST(IncludeLexer, EveryHostileSpellingIsReportedAsRefusable) {
  for (const test::HostileInclude& hostile : test::hostile_includes()) {
    const std::string text = test::instantiate(hostile.source_template, "/etc/passwd");
    const std::vector<IncludeDirective> found = scan_include_directives(text);
    const bool refusable = std::any_of(found.begin(), found.end(), [](const IncludeDirective& directive) {
      return directive.computed || directive.target.starts_with("/") ||
             directive.target.find("..") != std::string::npos;
    });
    EXPECT_TRUE(refusable) << hostile.name;
  }
}

// The span of a name is where the client writes a new one: it must be
// inside the text and hold exactly the name once splices are taken out.
TEST(IncludeLexer, SpansCoverTheNames) {
  for (const test::HostileInclude& hostile : test::hostile_includes()) {
    const std::string text = test::instantiate(hostile.source_template, "/etc/passwd");
    for (const IncludeDirective& directive : scan_include_directives(text)) {
      ASSERT_LE(directive.target_offset + directive.target_length, text.size()) << hostile.name;
      if (directive.computed || text.find("?\?") != std::string::npos) continue;
      EXPECT_EQ(without_splices(std::string_view(text).substr(directive.target_offset, directive.target_length)),
                directive.target)
          << hostile.name;
    }
  }
}

TEST(IncludeLexer, InstantiateReplacesEveryPlaceholder) {
  EXPECT_EQ(test::instantiate("#include \"@PATH@\"\n#if __has_include(<@PATH@>)\n", "/x"),
            "#include \"/x\"\n#if __has_include(</x>)\n");
}

TEST(IncludeLexer, EmptyAndTruncatedTexts) {
  EXPECT_TRUE(scan_include_directives("").empty());
  EXPECT_TRUE(targets_of("#").empty());
  EXPECT_TRUE(targets_of("/*").empty());
  EXPECT_TRUE(targets_of("R\"x(").empty());
  EXPECT_TRUE(targets_of("\\").empty());
  EXPECT_EQ(scan_include_directives("#include").size(), 1u);  // computed, with nothing after
}

// Nested `__has_include(<` without a '>' would make a naive lexer quadratic,
// and reading operands as tokens reports ever longer names; the scan stays
// bounded, and what it reports is all refusable.
TEST(IncludeLexer, PathologicalTextIsScannedInBoundedWork) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "__has_include(<";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_FALSE(found.empty());
  EXPECT_LE(found.size(), 2u * 65536u);
  for (const IncludeDirective& directive : found) ASSERT_TRUE(directive.computed);
}

// Past a bound on what one text may report, the scan stops with a computed
// directive, so the policy refuses instead of checking half a text.
TEST(IncludeLexer, TooManyDirectivesEndWithAComputedOne) {
  std::string text;
  for (int i = 0; i < 70000; ++i) text += "#include \"a.h\"\n";
  text += "#include \"/etc/passwd\"\n";
  const std::vector<IncludeDirective> found = scan_include_directives(text);
  ASSERT_FALSE(found.empty());
  EXPECT_LT(found.size(), 70000u);
  EXPECT_TRUE(found.back().computed);
}

}  // namespace
}  // namespace kjit
