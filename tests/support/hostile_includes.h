// Spellings of "read this host file" that a compile request could use to make
// the daemon's NVRTC open its own files; the include policy must refuse each.
//
// Each entry is a small CUDA C++ translation unit in which `@PATH@` stands for
// an absolute host path (see instantiate). The note above each entry says
// whether NVRTC 13.0 (libnvrtc, driven directly with the daemon's include
// paths and each -std from c++03 to c++20) actually opens the file: "every
// -std", the standards under which it does, or "no" for spellings that only
// other preprocessors (GCC: lone CR line ends, a byte order mark, backslash
// and spaces before a newline), a future NVRTC (`#import`, header units), a
// skipped #if branch or a malformed name would honour; those are refused all
// the same. For __has_include entries "opens" means the probe answers true.
//
// Notably, NVRTC honours trigraphs up to C++14 only (so `// x ??/` hides the
// next line from a C++14 compile but not from a C++17 one), has no raw strings
// in C++03 and no digit separators before C++14, takes a '#' after a comment
// that spans lines as the start of a directive, lexes the operand of an
// #include in a skipped #if branch as ordinary tokens, does not revert
// splices inside raw strings, and evaluates __has_include anywhere, through
// macros too.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::test {

struct HostileInclude {
  std::string_view name;
  std::string_view source_template;
};

inline constexpr std::string_view k_path_placeholder = "@PATH@";

inline constexpr HostileInclude k_hostile_includes[] = {
    // --- Plain forms.
    // NVRTC: every -std
    {"quoted", "#include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"angled", "#include <@PATH@>\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"include_next_quoted", "#include_next \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"include_next_angled", "#include_next <@PATH@>\n__global__ void k() {}\n"},
    // NVRTC: no
    {"import_quoted", "#import \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: no
    {"import_angled", "#import <@PATH@>\n__global__ void k() {}\n"},
    // NVRTC: no (C++20 header units are not supported)
    {"header_unit_import", "import \"@PATH@\";\n__global__ void k() {}\n"},
    // NVRTC: no
    {"export_import_header_unit", "export import <@PATH@>;\n__global__ void k() {}\n"},
    // NVRTC: every -std (relative to the working directory)
    {"relative_climb", "#include \"../../../../../../../../../../@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std (relative to the toolkit's include directory)
    {"relative_climb_angled", "#include <../../../../../../../../../../@PATH@>\n__global__ void k() {}\n"},
    // NVRTC: no (a backslash is no separator on Linux)
    {"relative_climb_backslash",
     "#include \"..\\..\\..\\..\\..\\..\\..\\..\\..\\..\\@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: no (the directive is skipped; the policy does not evaluate #if)
    {"disabled_branch", "#if 0\n#include \"@PATH@\"\n#endif\n__global__ void k() {}\n"},

    // --- Whitespace and comments inside the directive.
    // NVRTC: every -std
    {"spaces_and_tabs", "  \t#  \t include \t \"@PATH@\"  \n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"no_space", "#include\"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"vertical_tab_form_feed", "\v\f#\v\finclude\v\f\"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"comment_before_hash", "/* c */ #include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"comments_inside", "# /**/ include /**/ \"@PATH@\" /**/\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"multiline_comment_before_hash", "/* first\n   second */ #include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"multiline_comment_inside", "#/*\n*/include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"comment_newline_before_name", "#include /*\n*/ \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std (the comment's newline starts a line)
    {"code_then_multiline_comment", "int x; /*\n*/ #include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"line_comment_after", "#include \"@PATH@\" // c\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"trailing_tokens", "#include \"@PATH@\" junk\n__global__ void k() {}\n"},

    // --- Digraphs and trigraphs.
    // NVRTC: every -std
    {"digraph", "%:include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"digraph_spaced_angled", " %: include <@PATH@>\n__global__ void k() {}\n"},
    // NVRTC: no (a stray ##)
    {"double_digraph", "%:%:include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: no (a stray ##)
    {"pasted_hash", "##include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: C++03, C++11, C++14
    {"trigraph_hash", "?\?=include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: C++03, C++11, C++14
    {"trigraph_splice_in_keyword", "#inc?\?/\nlude \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: C++17, C++20 (no trigraphs, so the comment ends)
    {"trigraph_splice_in_line_comment", "// note ?\?/\n#include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: C++17, C++20
    {"trigraph_splice_in_string", "#define S \"?\?/\n#include \"@PATH@\"\n__global__ void k() {}\n"},

    // --- Line splices.
    // NVRTC: every -std
    {"splice_before_hash", "\\\n#include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_after_hash", "#\\\ninclude \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_in_keyword", "#inc\\\nlude \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_every_character", "#\\\ni\\\nn\\\nc\\\nl\\\nu\\\nd\\\ne\\\n \\\n\"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_before_name", "#include \\\n\"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_after_open_quote", "#include \"\\\n@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_before_close_quote", "#include \"@PATH@\\\n\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_in_angled", "#include <\\\n@PATH@\\\n>\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_in_digraph", "%\\\n:include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"splice_crlf", "#inc\\\r\nlude \"@PATH@\"\r\n__global__ void k() {}\r\n"},
    // NVRTC: no (GCC splices a backslash followed by spaces; EDG does not)
    {"splice_with_trailing_space", "#inc\\ \t \nlude \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std (so the comment ends at that line)
    {"line_comment_backslash_space", "// note \\ \n#include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"line_comment_backslash_space_crlf", "// note \\ \r\n#include \"@PATH@\"\r\n__global__ void k() {}\r\n"},
    // NVRTC: every -std
    {"spliced_comment_opener", "/\\\n* c *\\\n/ #include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"spliced_comment_closer", "/* c *\\\n/ #include \"@PATH@\"\n__global__ void k() {}\n"},

    // --- Line ends and encodings.
    // NVRTC: every -std
    {"crlf", "int a;\r\n#include \"@PATH@\"\r\n__global__ void k() {}\r\n"},
    // NVRTC: no (a lone CR is a space to EDG, a line end to GCC)
    {"cr_only", "__device__ int a;\r#include \"@PATH@\"\r__global__ void k() {}\r"},
    // NVRTC: no (a byte order mark is an unknown token to EDG; GCC skips it)
    {"bom",
     "\xEF\xBB\xBF"
     "#include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: no
    {"ucn_directive_name", "#\\u0069nclude \"@PATH@\"\n__global__ void k() {}\n"},

    // --- Literals that do or do not hide the directive.
    // NVRTC: every -std (the literal ends at the line's end)
    {"unterminated_string_before", "#if 0\n\"\n#endif\n#include \"@PATH@\"\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"apostrophe_in_skipped_prose", "#if 0\ndon't /*\n#endif\n#include \"@PATH@\"\n// */\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"char_literal_comment_opener", "#if 0\n'/*'\n#endif\n#include \"@PATH@\"\n// */\n__global__ void k() {}\n"},
    // NVRTC: C++03, C++11 (1'a is no number there, so '/*' is a character literal)
    {"digit_separator_in_cxx11", "int x = 1'a/*';\n#include \"@PATH@\"\n// */\n__global__ void k() {}\n"},
    // NVRTC: C++03 (no raw strings)
    {"raw_string_in_cxx03", "#define R\nconst char* s = R\"(\n#include \"@PATH@\"\n)\";\n__global__ void k() {}\n"},
    // NVRTC: every -std (a delimiter over 16 characters makes no raw string)
    {"raw_string_long_delimiter",
     "const char* s = R\"12345678901234567(\n#include \"@PATH@\"\n)12345678901234567\";\n__global__ void k() {}\n"},
    // NVRTC: every -std (x\u00e9R is one identifier, so no raw string)
    {"ucn_identifier_before_raw_string",
     "const char* s = x\\u00e9R\"(\n#include \"@PATH@\"\n)\";\n__global__ void k() {}\n"},
    // NVRTC: every -std (EDG does not revert the splice in a raw string)
    {"raw_string_spliced_close",
     "const char* s = R\"x(\n)x\\\n\"\n#include \"@PATH@\"\n// )x\"\n__global__ void k() {}\n"},
    // NVRTC: C++03, C++11, C++14
    {"raw_string_trigraph_spliced_close",
     "const char* s = R\"x(\n)x?\?/\n\"\n#include \"@PATH@\"\n// )x\"\n__global__ void k() {}\n"},
    // NVRTC: every -std (in a skipped branch the operand is a string literal)
    {"skipped_include_escaped_quote",
     "#if 0\n#include \"a\\\" /* \"\n#endif\n#include \"@PATH@\"\n// */\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"skipped_has_include_escaped_quote",
     "#if 0\n#if __has_include(\"a\\\" /* \")\n#endif\n#endif\n#include \"@PATH@\"\n// */\n__global__ void k() {}\n"},
    // NVRTC: every -std (an active __has_include operand is a header name)
    {"has_include_angled_comment_opener",
     "#if __has_include(<x/*y.h>)\n#endif\n#include \"@PATH@\"\n// */\n__global__ void k() {}\n"},

    // --- __has_include probes.
    // NVRTC: every -std
    {"has_include_in_if", "#if __has_include(\"@PATH@\")\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"has_include_angled_in_elif",
     "#if 0\n#elif __has_include(<@PATH@>)\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"has_include_next",
     "#if __has_include_next(\"@PATH@\")\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"has_include_spliced",
     "#if __has_\\\ninclude ( \"@PATH@\" )\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"has_include_in_macro",
     "#define PROBE __has_include(\"@PATH@\")\n#if PROBE\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"has_include_computed",
     "#define P \"@PATH@\"\n#if __has_include(P)\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"has_include_through_macro",
     "#define H __has_include\n#if H(\"@PATH@\")\n#error host file found\n#endif\n__global__ void k() {}\n"},
    // NVRTC: every -std (evaluated outside #if too)
    {"has_include_in_code",
     "constexpr bool b = __has_include(\"@PATH@\");\nstatic_assert(!b, \"host file found\");\n__global__ void k() "
     "{}\n"},
    // NVRTC: no
    {"has_include_ucn",
     "#if __has_\\u0069nclude(\"@PATH@\")\n#error host file found\n#endif\n__global__ void k() {}\n"},

    // --- Computed includes.
    // NVRTC: every -std
    {"computed_macro", "#define P \"@PATH@\"\n#include P\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"computed_angled_macro", "#define P <@PATH@>\n#include P\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"computed_stringize", "#define S2(x) #x\n#define S(x) S2(x)\n#include S(@PATH@)\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"computed_function_like", "#define H(x) x\n#include H(\"@PATH@\")\n__global__ void k() {}\n"},
    // NVRTC: every -std
    {"computed_include_next", "#define P \"@PATH@\"\n#include_next P\n__global__ void k() {}\n"},
    // NVRTC: no
    {"computed_unterminated_angle", "#define GT >\n#include <@PATH@ GT\n__global__ void k() {}\n"},
    // NVRTC: no
    {"prefixed_string_name", "#include u8\"@PATH@\"\n__global__ void k() {}\n"},
};

// Every spelling above, for parameterised tests.
inline const std::vector<HostileInclude>& hostile_includes() {
  static const std::vector<HostileInclude> all(std::begin(k_hostile_includes), std::end(k_hostile_includes));
  return all;
}

// The template with every `@PATH@` replaced by `path`.
inline std::string instantiate(std::string_view tmpl, std::string_view path) {
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = tmpl.find(k_path_placeholder); at != std::string_view::npos;
       at = tmpl.find(k_path_placeholder, start)) {
    out.append(tmpl, start, at - start);
    out.append(path);
    start = at + k_path_placeholder.size();
  }
  out.append(tmpl, start);
  return out;
}

}  // namespace kjit::test
