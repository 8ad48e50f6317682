// The include lexer: translation phases 1 to 3 over the original text, one
// dialect per pass, and the union of the passes. See include_lexer.h.
#include "source/include_lexer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

namespace kjit {
namespace {

using Kind = IncludeDirective::Kind;

// A header name longer than this is reported as computed: no real path is
// that long, and the bound keeps a text of nested `__has_include(<` linear.
constexpr std::size_t k_max_name_bytes = 1024;
// Computed operands are kept for messages only; this much is enough.
constexpr std::size_t k_max_computed_chars = 256;
// Past these a pass stops with a computed directive, which the policy
// refuses: no real source comes near, and a crafted one (nested operands
// read as tokens report ever longer names) cannot make the result huge.
constexpr std::size_t k_max_directives = std::size_t{1} << 16;
constexpr std::size_t k_max_target_bytes = std::size_t{4} << 20;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Bytes of UTF-8 sequences count as identifier characters so that they never
// start or end a token by accident; so does '$', which EDG and GCC accept.
bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool is_identifier_char(char c) {
  return is_identifier_start(c) || is_digit(c);
}

// '\r' too: under EDG a lone CR is a space.
bool is_horizontal_space(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

char trigraph_replacement(char third) {
  switch (third) {
    case '=':
      return '#';
    case '/':
      return '\\';
    case '\'':
      return '^';
    case '(':
      return '[';
    case ')':
      return ']';
    case '!':
      return '|';
    case '<':
      return '{';
    case '>':
      return '}';
    case '-':
      return '~';
    default:
      return '\0';
  }
}

bool is_raw_string_prefix(std::string_view identifier) {
  return identifier == "R" || identifier == "LR" || identifier == "uR" || identifier == "UR" || identifier == "u8R";
}

bool is_include_keyword(std::string_view name) {
  return name == "include" || name == "include_next" || name == "import";
}

Kind kind_of_keyword(std::string_view name) {
  if (name == "include_next") return Kind::include_next;
  if (name == "import") return Kind::import;
  return Kind::include;
}

bool is_has_include(std::string_view identifier) {
  return identifier == "__has_include" || identifier == "__has_include_next";
}

// 1-based physical line of an offset; LF, CRLF and a lone CR each end a line.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))) {
        starts_.push_back(i + 1);
      }
    }
  }

  std::size_t line_of(std::size_t offset) const {
    return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin());
  }

 private:
  std::vector<std::size_t> starts_;
};

// Phases 1 and 2 on demand: the text after trigraph replacement, line-end
// folding and splice removal, read one character at a time by original
// offset, so every character keeps its place in the original text.
class LogicalText {
 public:
  struct Char {
    char c = '\0';
    std::size_t start = 0;  // original offset of its first byte, after any splices before it
    std::size_t next = 0;   // original offset just after it
    bool eof = false;
  };

  LogicalText(std::string_view text, const IncludeScanDialect& dialect) : text_(text), dialect_(dialect) {}

  std::size_t size() const { return text_.size(); }

  // Where reading starts: GCC skips a UTF-8 byte order mark, EDG lexes it as
  // an unknown token (so a '#' after it does not start a directive).
  std::size_t begin() const { return dialect_.gnu_lines && text_.starts_with("\xEF\xBB\xBF") ? 3 : 0; }

  Char at(std::size_t pos) const {
    // Most bytes stand for themselves.
    if (pos < text_.size()) [[likely]] {
      const char c = text_[pos];
      if (c != '\\' && c != '\r' && (c != '?' || !dialect_.trigraphs)) [[likely]] {
        return Char{c, pos, pos + 1, false};
      }
    }
    return decode(pos);
  }

  // Inside a raw string phases 1 and 2 are reverted: GCC reverts both, so the
  // original bytes count; EDG (checked) reverts trigraphs but not splices.
  Char raw_at(std::size_t pos) const {
    if (!dialect_.gnu_lines) pos = skip_splices(pos);
    if (pos >= text_.size()) return Char{'\0', text_.size(), text_.size(), true};
    return Char{text_[pos], pos, pos + 1, false};
  }

 private:
  Char decode(std::size_t pos) const {
    pos = skip_splices(pos);
    if (pos >= text_.size()) return Char{'\0', text_.size(), text_.size(), true};
    const auto [c, length] = physical(pos);
    return Char{c, pos, pos + length, false};
  }

  // One phase-1 character at pos: a trigraph, a line end folded to '\n', or
  // a byte.
  std::pair<char, std::size_t> physical(std::size_t pos) const {
    const char c = text_[pos];
    if (dialect_.trigraphs && c == '?' && pos + 2 < text_.size() && text_[pos + 1] == '?') {
      if (const char replaced = trigraph_replacement(text_[pos + 2])) return {replaced, 3};
    }
    if (c == '\r') {
      if (pos + 1 < text_.size() && text_[pos + 1] == '\n') return {'\n', 2};
      return {dialect_.gnu_lines ? '\n' : '\r', 1};
    }
    return {c, 1};
  }

  // A backslash and a line end vanish; GCC also allows spaces between them.
  std::size_t skip_splices(std::size_t pos) const {
    while (pos < text_.size()) {
      const auto [c, length] = physical(pos);
      if (c != '\\') break;
      std::size_t after = pos + length;
      if (dialect_.gnu_lines) {
        while (after < text_.size() &&
               (text_[after] == ' ' || text_[after] == '\t' || text_[after] == '\v' || text_[after] == '\f')) {
          ++after;
        }
      }
      if (after >= text_.size()) break;
      const auto [end, end_length] = physical(after);
      if (end != '\n') break;
      pos = after + end_length;
    }
    return pos;
  }

  std::string_view text_;
  IncludeScanDialect dialect_;
};

struct Identifier {
  std::string name;  // universal-character-names below 0x80 decoded, others as one byte 0x80
  bool has_ucn = false;
  std::size_t start = 0;
};

// One pass over the text under one dialect.
class Lexer {
 public:
  Lexer(std::string_view text, const IncludeScanDialect& dialect, const LineIndex& lines)
      : text_(text, dialect), dialect_(dialect), lines_(lines) {}

  std::vector<IncludeDirective> scan() {
    pos_ = text_.begin();
    while (!stopped_) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof) break;
      if (ch.c == '\n') {
        pos_ = ch.next;
        start_line();
      } else if (is_horizontal_space(ch.c)) {
        pos_ = ch.next;
      } else if (ch.c == '/' && at(ch.next).c == '/') {
        skip_line_comment();
      } else if (ch.c == '/' && at(ch.next).c == '*') {
        skip_block_comment(true);
      } else if (line_start_ && (ch.c == '#' || (ch.c == '%' && at(ch.next).c == ':'))) {
        line_start_ = false;
        parse_directive();
        ++tokens_on_line_;
      } else {
        line_start_ = false;
        lex_token();
        ++tokens_on_line_;
      }
    }
    return std::move(found_);
  }

  // Whether an include's operand was lexed; only then can reading operands
  // as tokens differ.
  bool lexed_an_operand() const { return lexed_an_operand_; }

 private:
  LogicalText::Char at(std::size_t pos) const { return text_.at(pos); }

  void start_line() {
    line_start_ = true;
    tokens_on_line_ = 0;
    exempt_ = Exempt::none;
    import_may_follow_ = false;
  }

  void skip_line_comment() {
    while (true) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof || ch.c == '\n') return;
      pos_ = ch.next;
    }
  }

  // A newline inside the comment starts a line for EDG (checked: NVRTC takes
  // `int x; /*<newline>*/ #include "f"` as a directive), but not inside a
  // directive, which the comment continues.
  void skip_block_comment(bool newline_starts_line) {
    pos_ = at(at(pos_).next).next;
    while (true) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof) return;
      if (ch.c == '*') {
        const LogicalText::Char slash = at(ch.next);
        if (slash.c == '/') {
          pos_ = slash.next;
          return;
        }
      }
      if (ch.c == '\n' && newline_starts_line) start_line();
      pos_ = ch.next;
    }
  }

  // Spaces and /* */ comments inside a directive; not its newline.
  void skip_directive_space() {
    while (true) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof) return;
      if (is_horizontal_space(ch.c)) {
        pos_ = ch.next;
      } else if (ch.c == '/' && at(ch.next).c == '*') {
        skip_block_comment(false);
      } else {
        return;
      }
    }
  }

  // Literals that are not raw end at the line's end even when unterminated,
  // as EDG and GCC end them: an apostrophe in prose under `#if 0` or in
  // `#error don't` must not hide the rest of the file.
  void skip_quoted(char quote) {
    pos_ = at(pos_).next;
    while (true) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof || ch.c == '\n') return;
      pos_ = ch.next;
      if (ch.c == quote) return;
      if (ch.c == '\\') {
        const LogicalText::Char escaped = at(pos_);
        if (!escaped.eof && escaped.c != '\n') pos_ = escaped.next;
      }
    }
  }

  // At the '"' of R"delim( ... )delim". Returns false, consuming nothing,
  // when the delimiter is malformed: then compilers report an error, and
  // lexing on as an ordinary string hides nothing past the line.
  bool skip_raw_string() {
    const LogicalText::Char quote = at(pos_);
    std::string delimiter;
    std::size_t p = quote.next;
    while (true) {
      const LogicalText::Char ch = text_.raw_at(p);
      if (ch.eof) return false;
      if (ch.c == '(') {
        p = ch.next;
        break;
      }
      if (delimiter.size() == 16 || ch.c == ' ' || ch.c == ')' || ch.c == '\\' || ch.c == '"' ||
          static_cast<unsigned char>(ch.c) < 0x20 || ch.c == 0x7f) {
        return false;
      }
      delimiter += ch.c;
      p = ch.next;
    }
    // Unterminated, it runs to the end of the text, as it does for NVRTC.
    while (true) {
      const LogicalText::Char ch = text_.raw_at(p);
      if (ch.eof) {
        pos_ = ch.start;
        return true;
      }
      p = ch.next;
      if (ch.c != ')') continue;
      std::size_t q = p;
      bool matches = true;
      for (char d : delimiter) {
        const LogicalText::Char next = text_.raw_at(q);
        if (next.eof || next.c != d) {
          matches = false;
          break;
        }
        q = next.next;
      }
      if (!matches) continue;
      const LogicalText::Char close = text_.raw_at(q);
      if (!close.eof && close.c == '"') {
        pos_ = close.next;
        return true;
      }
    }
  }

  // A universal-character-name at pos: its code point and where it ends.
  bool read_ucn(std::size_t pos, std::uint32_t& code_point, std::size_t& end) const {
    const LogicalText::Char backslash = at(pos);
    if (backslash.eof || backslash.c != '\\') return false;
    const LogicalText::Char u = at(backslash.next);
    if (u.eof || (u.c != 'u' && u.c != 'U')) return false;
    const int digits = u.c == 'u' ? 4 : 8;
    std::size_t p = u.next;
    code_point = 0;
    for (int i = 0; i < digits; ++i) {
      const LogicalText::Char hex = at(p);
      if (hex.eof || !is_hex_digit(hex.c)) return false;
      const int value = is_digit(hex.c) ? hex.c - '0' : (hex.c | 0x20) - 'a' + 10;
      code_point = code_point * 16 + static_cast<std::uint32_t>(value);
      p = hex.next;
    }
    end = p;
    return true;
  }

  // An identifier at pos_, or an empty one. Universal-character-names are
  // part of identifiers: without that, `x\u00e9R"(` would look like a raw
  // string to the lexer but not to the compiler.
  Identifier read_identifier() {
    Identifier identifier;
    identifier.start = at(pos_).start;
    while (true) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof) break;
      const bool first = identifier.name.empty();
      if (first ? is_identifier_start(ch.c) : is_identifier_char(ch.c)) {
        identifier.name += ch.c;
        pos_ = ch.next;
        continue;
      }
      std::uint32_t code_point = 0;
      std::size_t end = 0;
      if (!read_ucn(pos_, code_point, end)) break;
      identifier.name += code_point < 0x80 ? static_cast<char>(code_point) : '\x80';
      identifier.has_ucn = true;
      pos_ = end;
    }
    return identifier;
  }

  // A preprocessing number, so that the digit separator in 1'000 is not
  // taken for the start of a character literal (before C++14 it is one).
  void skip_pp_number() {
    pos_ = at(pos_).next;
    while (true) {
      const LogicalText::Char ch = at(pos_);
      if (ch.eof) return;
      const LogicalText::Char next = at(ch.next);
      std::uint32_t code_point = 0;
      std::size_t end = 0;
      if ((ch.c == 'e' || ch.c == 'E' || ch.c == 'p' || ch.c == 'P') && (next.c == '+' || next.c == '-')) {
        pos_ = next.next;
      } else if (is_identifier_char(ch.c) || ch.c == '.') {
        pos_ = ch.next;
      } else if (read_ucn(pos_, code_point, end)) {
        pos_ = end;
      } else if (dialect_.digit_separators && ch.c == '\'' && !next.eof &&
                 (is_identifier_char(next.c) || read_ucn(ch.next, code_point, end))) {
        pos_ = ch.next;
      } else {
        return;
      }
    }
  }

  void lex_token() {
    const LogicalText::Char ch = at(pos_);
    if (!is_identifier_start(ch.c)) import_may_follow_ = false;
    if (ch.c == '"' || ch.c == '\'') {
      skip_quoted(ch.c);
      exempt_ = Exempt::none;
      return;
    }
    if (is_digit(ch.c) || (ch.c == '.' && is_digit(at(ch.next).c))) {
      skip_pp_number();
      exempt_ = Exempt::none;
      return;
    }
    std::uint32_t code_point = 0;
    std::size_t end = 0;
    if (is_identifier_start(ch.c) || read_ucn(pos_, code_point, end)) {
      lex_identifier();
      return;
    }
    pos_ = ch.next;
    // `defined ( __has_include )` keeps the exemption through the parenthesis.
    exempt_ = ch.c == '(' && exempt_ == Exempt::after_defined ? Exempt::identifier : Exempt::none;
  }

  void lex_identifier() {
    const bool first_on_line = tokens_on_line_ == 0;
    const Identifier identifier = read_identifier();
    const Exempt exempt = exempt_;
    exempt_ = Exempt::none;
    const bool import_may_follow = import_may_follow_;
    import_may_follow_ = first_on_line && identifier.name == "export";

    if (dialect_.raw_strings && !identifier.has_ucn && at(pos_).c == '"' && is_raw_string_prefix(identifier.name)) {
      if (!skip_raw_string()) skip_quoted('"');
      return;
    }
    if (identifier.name == "defined") {
      exempt_ = Exempt::after_defined;
    } else if (is_has_include(identifier.name)) {
      if (exempt == Exempt::none) parse_has_include(identifier);
    } else if (identifier.name == "import" && !identifier.has_ucn && (first_on_line || import_may_follow)) {
      parse_module_import(identifier);
    }
  }

  // At the identifier __has_include; pos_ just after it.
  void parse_has_include(const Identifier& identifier) {
    const std::size_t line = lines_.line_of(identifier.start);
    if (identifier.has_ucn) {
      report_name_only(Kind::has_include, identifier, line);
      return;
    }
    const std::size_t after_name = pos_;
    skip_directive_space();
    const LogicalText::Char paren = at(pos_);
    if (paren.eof || paren.c != '(') {
      // `#define H __has_include` then `#if H("f")`: NVRTC probes "f" (checked).
      pos_ = after_name;
      report_name_only(Kind::has_include, identifier, line);
      return;
    }
    pos_ = paren.next;
    skip_directive_space();
    parse_operand(Kind::has_include, line, true);
  }

  // At a C++20 `import` that starts a line; only a header unit names a file.
  void parse_module_import(const Identifier& identifier) {
    const std::size_t after_name = pos_;
    skip_directive_space();
    const LogicalText::Char open = at(pos_);
    // `import < x;` in old code is a comparison, not a header unit.
    const bool header_unit = open.c == '"' || open.c == '<';
    if (header_unit && find_closing(open, open.c == '"' ? '"' : '>').c == (open.c == '"' ? '"' : '>')) {
      parse_operand(Kind::import, lines_.line_of(identifier.start), false);
    } else {
      pos_ = after_name;
    }
  }

  // At a '#' (or "%:") that starts a line. Only the include-like directives
  // matter; the rest of any other directive is lexed as ordinary text, which
  // is harmless since it cannot start a new line without a newline token.
  void parse_directive() {
    const LogicalText::Char hash = at(pos_);
    const std::size_t line = lines_.line_of(hash.start);
    pos_ = hash.c == '#' ? hash.next : at(hash.next).next;
    // "##include" is a stray paste operator to every compiler checked; it is
    // reported (as computed, so refused) all the same.
    bool pasted = false;
    const LogicalText::Char second = at(pos_);
    if (second.c == '#') {
      pasted = true;
      pos_ = second.next;
    } else if (second.c == '%' && at(second.next).c == ':') {
      pasted = true;
      pos_ = at(second.next).next;
    }
    skip_directive_space();
    const Identifier name = read_identifier();
    if (name.name.empty()) return;
    if (name.has_ucn) {
      // `#\u0069nclude`: NVRTC does not take it for a directive, but nothing
      // spelled so is worth the risk.
      report_name_only(is_include_keyword(name.name) ? kind_of_keyword(name.name) : Kind::include, name, line);
      return;
    }
    if (!is_include_keyword(name.name)) {
      if (!pasted &&
          (name.name == "ifdef" || name.name == "ifndef" || name.name == "elifdef" || name.name == "elifndef")) {
        exempt_ = Exempt::identifier;
      }
      return;
    }
    if (pasted) {
      report_name_only(kind_of_keyword(name.name), name, line);
      return;
    }
    skip_directive_space();
    parse_operand(kind_of_keyword(name.name), line, false);
  }

  // At the operand of an include (pos_ on its first character): a "name" or
  // <name> on the logical line, or else tokens, reported as computed.
  void parse_operand(Kind kind, std::size_t line, bool in_parentheses) {
    lexed_an_operand_ = true;
    const LogicalText::Char open = at(pos_);
    if (open.eof || (open.c != '"' && open.c != '<')) {
      report_computed(kind, line, in_parentheses);  // the main loop lexes the tokens
      return;
    }
    const char close = open.c == '"' ? '"' : '>';
    IncludeDirective directive;
    directive.kind = kind;
    directive.angled = close == '>';
    directive.line = line;
    const LogicalText::Char closing = find_closing(open, close);
    if (closing.eof || closing.c != close) {
      report_computed(kind, line, in_parentheses);
      continue_after_operand(open);
      return;
    }
    std::size_t first = std::string::npos;
    std::size_t last_end = open.next;
    for (LogicalText::Char ch = at(open.next); ch.start < closing.start; ch = at(ch.next)) {
      if (first == std::string::npos) first = ch.start;
      directive.target += ch.c;
      last_end = ch.next;
    }
    directive.target_offset = first == std::string::npos ? closing.start : first;
    directive.target_length = first == std::string::npos ? 0 : last_end - first;
    record(std::move(directive));
    if (dialect_.header_names_as_tokens) {
      continue_after_operand(open);
    } else {
      pos_ = closing.next;
    }
  }

  // The closing delimiter of an operand opened by `open`, or where the search
  // stopped: at the line's end, or past k_max_name_bytes (then neither eof
  // nor `close`).
  LogicalText::Char find_closing(const LogicalText::Char& open, char close) {
    // Operands nest when read as tokens (`__has_include(<__has_include(<`);
    // what an earlier search saw free of `close` and newlines is skipped, so
    // that a pass stays linear.
    ClearRange& clear = clear_[close == '>' ? 1 : 0];
    std::size_t p = open.next;
    if (p >= clear.from && p <= clear.to) {
      p = clear.to;
    } else {
      clear.from = p;
    }
    LogicalText::Char ch;
    while (true) {
      ch = at(p);
      if (ch.eof || ch.c == '\n' || ch.c == close || ch.start - open.next > k_max_name_bytes) break;
      p = ch.next;
    }
    clear.to = p;
    return ch;
  }

  // Lexes on from an operand's opening delimiter as a compiler that does not
  // read it as a header name: a string literal (escapes and all), or a '<'
  // followed by tokens.
  void continue_after_operand(const LogicalText::Char& open) {
    if (open.c == '"') {
      pos_ = open.start;
      skip_quoted('"');
    } else {
      pos_ = open.next;
    }
  }

  // The operand from pos_ to the end of the logical line (or the closing
  // parenthesis of __has_include), comments as one space; pos_ is left
  // alone.
  void report_computed(Kind kind, std::size_t line, bool in_parentheses) {
    IncludeDirective directive;
    directive.kind = kind;
    directive.computed = true;
    directive.line = line;
    directive.target_offset = at(pos_).start;
    std::size_t p = pos_;
    std::size_t end = directive.target_offset;
    int depth = 0;
    while (directive.target.size() < k_max_computed_chars) {
      const LogicalText::Char ch = at(p);
      if (ch.eof || ch.c == '\n') break;
      const LogicalText::Char next = at(ch.next);
      if (ch.c == '/' && next.c == '/') break;
      if (ch.c == '/' && next.c == '*') {
        p = next.next;
        while (true) {
          const LogicalText::Char inner = at(p);
          if (inner.eof) break;
          p = inner.next;
          if (inner.c == '*' && at(p).c == '/') {
            p = at(p).next;
            break;
          }
        }
        if (!directive.target.empty() && directive.target.back() != ' ') directive.target += ' ';
        continue;
      }
      if (in_parentheses && ch.c == '(') ++depth;
      if (in_parentheses && ch.c == ')' && depth-- == 0) break;
      if (is_horizontal_space(ch.c)) {
        if (!directive.target.empty() && directive.target.back() != ' ') directive.target += ' ';
      } else {
        if (directive.target.empty()) directive.target_offset = ch.start;
        directive.target += ch.c;
        end = ch.next;
      }
      p = ch.next;
    }
    while (!directive.target.empty() && directive.target.back() == ' ') directive.target.pop_back();
    directive.target_length = end - directive.target_offset;
    record(std::move(directive));
  }

  // A refused spelling whose operand does not matter: the target is the
  // spelling's own name.
  void report_name_only(Kind kind, const Identifier& name, std::size_t line) {
    IncludeDirective directive;
    directive.kind = kind;
    directive.computed = true;
    directive.line = line;
    directive.target_offset = name.start;
    directive.target_length = pos_ > name.start ? pos_ - name.start : 0;
    directive.target = name.name;
    lexed_an_operand_ = true;
    record(std::move(directive));
  }

  void record(IncludeDirective directive) {
    if (stopped_) return;
    if (found_.size() + 1 >= k_max_directives || target_bytes_ + directive.target.size() > k_max_target_bytes) {
      directive.computed = true;
      directive.target = "(more include directives than can be checked)";
      directive.target_length = 0;
      stopped_ = true;
    }
    target_bytes_ += directive.target.size();
    found_.push_back(std::move(directive));
  }

  // Which identifier is the operand of `defined` or #ifdef, and so names the
  // __has_include macro instead of calling it.
  enum class Exempt { none, after_defined, identifier };

  // Original offsets [from, to) holding neither a given closing delimiter
  // nor a newline, as an earlier find_closing saw them.
  struct ClearRange {
    std::size_t from = 1;
    std::size_t to = 0;
  };

  LogicalText text_;
  IncludeScanDialect dialect_;
  std::array<ClearRange, 2> clear_;
  const LineIndex& lines_;
  std::size_t pos_ = 0;
  bool line_start_ = true;  // only whitespace and comments so far on this line
  std::size_t tokens_on_line_ = 0;
  bool import_may_follow_ = false;  // the line so far is `export`
  Exempt exempt_ = Exempt::none;
  bool lexed_an_operand_ = false;
  std::vector<IncludeDirective> found_;
  std::size_t target_bytes_ = 0;
  bool stopped_ = false;  // past k_max_directives or k_max_target_bytes
};

// The -std dialects of NVRTC 13.0, checked: trigraphs, raw strings, digit
// separators.
constexpr std::array<std::array<bool, 3>, 4> k_language_dialects{{
    {true, false, false},  // C++03
    {true, true, false},   // C++11
    {true, true, true},    // C++14
    {false, true, true},   // C++17, C++20
}};

bool contains_trigraph(std::string_view text) {
  for (std::size_t at = text.find("??"); at != std::string_view::npos; at = text.find("??", at + 1)) {
    if (at + 2 < text.size() && trigraph_replacement(text[at + 2]) != '\0') return true;
  }
  return false;
}

// Whether an R may be followed by a '"', splices or trigraphs between.
bool may_contain_raw_string(std::string_view text) {
  return text.find("R\"") != std::string_view::npos || text.find("R\\") != std::string_view::npos ||
         text.find("R?\?/") != std::string_view::npos;
}

// Whether GCC's phases 1 and 2 can differ from EDG's here.
bool gnu_lines_may_differ(std::string_view text, bool raw_strings) {
  if (text.find('\r') != std::string_view::npos || text.starts_with("\xEF\xBB\xBF")) return true;
  for (std::size_t at = text.find('\\'); at != std::string_view::npos; at = text.find('\\', at + 1)) {
    if (raw_strings) return true;  // splices are reverted in GCC's raw strings only
    if (at + 1 < text.size() && is_horizontal_space(text[at + 1])) return true;
  }
  if (!contains_trigraph(text)) return false;
  if (raw_strings) return true;  // and trigraph splices
  for (std::size_t at = text.find("?\?/"); at != std::string_view::npos; at = text.find("?\?/", at + 1)) {
    if (at + 3 < text.size() && is_horizontal_space(text[at + 3])) return true;
  }
  return false;
}

bool directive_less(const IncludeDirective& a, const IncludeDirective& b) {
  return std::tie(a.target_offset, a.kind, a.target_length, a.target, a.angled, a.computed, a.line) <
         std::tie(b.target_offset, b.kind, b.target_length, b.target, b.angled, b.computed, b.line);
}

bool directive_equal(const IncludeDirective& a, const IncludeDirective& b) {
  return std::tie(a.target_offset, a.kind, a.target_length, a.target, a.angled, a.computed, a.line) ==
         std::tie(b.target_offset, b.kind, b.target_length, b.target, b.angled, b.computed, b.line);
}

}  // namespace

std::vector<IncludeDirective> scan_include_directives_in_dialect(std::string_view text,
                                                                 const IncludeScanDialect& dialect) {
  const LineIndex lines(text);
  return Lexer(text, dialect, lines).scan();
}

std::vector<IncludeDirective> scan_include_directives(std::string_view text) {
  const LineIndex lines(text);
  // Flags the text cannot tell apart are fixed, so that a plain source is
  // read twice or four times rather than sixteen.
  const bool trigraphs = contains_trigraph(text);
  const bool raw_strings = may_contain_raw_string(text);
  const bool digit_separators = text.find('\'') != std::string_view::npos;
  const bool gnu_lines = gnu_lines_may_differ(text, raw_strings);

  std::vector<IncludeScanDialect> dialects;
  for (const auto& [language_trigraphs, language_raw, language_separators] : k_language_dialects) {
    for (bool gnu : {false, true}) {
      if (gnu && !gnu_lines) continue;
      IncludeScanDialect dialect;
      dialect.trigraphs = trigraphs && language_trigraphs;
      dialect.raw_strings = !raw_strings || language_raw;
      dialect.digit_separators = !digit_separators || language_separators;
      dialect.gnu_lines = gnu;
      const bool seen = std::any_of(dialects.begin(), dialects.end(), [&](const IncludeScanDialect& other) {
        return other.trigraphs == dialect.trigraphs && other.raw_strings == dialect.raw_strings &&
               other.digit_separators == dialect.digit_separators && other.gnu_lines == dialect.gnu_lines;
      });
      if (!seen) dialects.push_back(dialect);
    }
  }

  std::vector<IncludeDirective> all;
  for (IncludeScanDialect dialect : dialects) {
    Lexer header_names(text, dialect, lines);
    std::vector<IncludeDirective> found = header_names.scan();
    all.insert(all.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    // The same text with operands as tokens, as in a group #if skips: only
    // differs where an operand was lexed.
    if (!header_names.lexed_an_operand()) continue;
    dialect.header_names_as_tokens = true;
    found = Lexer(text, dialect, lines).scan();
    all.insert(all.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  std::sort(all.begin(), all.end(), directive_less);
  all.erase(std::unique(all.begin(), all.end(), directive_equal), all.end());
  return all;
}

}  // namespace kjit
