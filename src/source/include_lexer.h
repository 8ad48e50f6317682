// Finds the #include directives and __has_include probes of a C++ text the way
// a preprocessor (NVRTC's in particular) sees them, without running it.
//
// One implementation for the client (which follows the includes to send the
// headers) and the daemon (which refuses includes that would read its own
// files), so that both read a text the same way.
//
// What the lexer models: translation phases 1 to 3 (trigraphs, line splices,
// comments, literals, raw strings, digraphs) and where a directive may start.
// What it does not: macros are not expanded and #if is not evaluated, so an
// include under any branch is reported, and an include whose name comes from
// a macro is reported as `computed`.
//
// Compilers do not agree on phases 1 to 3, and NVRTC itself reads a text
// differently with each -std: checked against NVRTC 13.0, C++03 has no raw
// strings, C++03 and C++11 have no digit separators (so `1'a/*'` is a
// character literal, not a comment), and trigraphs are honoured up to C++14
// only. NVRTC (EDG) also differs from GCC: a lone CR is a space, not a line
// end; a backslash followed by spaces and a newline is not a splice; a splice
// inside a raw string is not reverted; a newline inside a /* */ comment ends
// the line, so `x; /*<newline>*/ #include` is a directive; and the operand of
// an #include in a group skipped by #if is lexed as ordinary tokens.
// scan_include_directives reads the text under every such dialect and reports
// the union, so that a text cannot hide an include from one reading behind
// another. The price is a few false positives: an include inside a raw string
// is reported too (a C++03 compile would honour it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// One #include-like reference to a file.
struct IncludeDirective {
  enum class Kind { include, include_next, import, has_include };  // has_include: __has_include / __has_include_next
  Kind kind = Kind::include;
  std::string target;     // the name between the delimiters, after splices are removed; for computed: the tokens
  bool angled = false;    // <target> rather than "target"
  bool computed = false;  // `#include MACRO` (or __has_include(MACRO)): not a literal name
  std::size_t target_offset = 0;  // offset in the ORIGINAL text of the name's first character
  std::size_t target_length = 0;  // length in the ORIGINAL text of the name (splices included)
  std::size_t line = 0;           // 1-based physical line where the directive starts
};

// One way of reading a text. The defaults are NVRTC's with its default -std
// (C++17).
struct IncludeScanDialect {
  bool trigraphs = false;        // ??= and friends (C++03 to C++14)
  bool raw_strings = true;       // R"d(...)d" (C++11 on)
  bool digit_separators = true;  // 1'000 (C++14 on)
  bool gnu_lines = false;        // GCC's phase 1-2: lone CR ends a line, "\ <newline>" splices, a BOM is skipped,
                                 // raw strings revert splices
  bool header_names_as_tokens = false;  // an include's operand is lexed as tokens (a group skipped by #if)
};

// Every directive found under any dialect, in order of target_offset, each
// reported once. Reported: #include, #include_next, #import, a C++20
// `import "name"` / `import <name>`, and __has_include / __has_include_next
// anywhere (in #if lines, macro bodies or code; NVRTC evaluates them in all
// three), except as the operand of `defined` or #ifdef. Refused spellings
// that a compiler might still take for a directive (`##include`, a directive
// name or __has_include spelled with a universal-character-name, an operand
// that is not a delimited name, an unterminated name) are reported as
// computed. Literals, comments and raw strings hide what they contain.
std::vector<IncludeDirective> scan_include_directives(std::string_view text);

// The directives under one dialect only.
std::vector<IncludeDirective> scan_include_directives_in_dialect(std::string_view text,
                                                                 const IncludeScanDialect& dialect);

}  // namespace kjit
