// Fuzzes the readers of #include directives in request sources: the include
// lexer (src/source) and the NVRTC include policy built on it.
//
// Together they keep a request from making the daemon read its own files.
// Input: the main source, then headers, each after a line "//@@ NAME"
// (NAME = the rest of the line), so corpus files read like a request.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backends/nvrtc/include_policy.h"
#include "fuzz_check.h"
#ifdef KJIT_FUZZ_HAVE_INCLUDE_LEXER
#include "source/include_lexer.h"
#endif

namespace {

constexpr std::string_view k_header_marker = "//@@ ";

struct Request {
  std::string_view source;
  std::map<std::string, std::string> headers;
};

Request split(std::string_view input) {
  Request request;
  std::string_view* current = &request.source;
  std::string_view name;
  size_t start = 0, pos = 0;
  auto finish = [&](size_t end) {
    const std::string_view part = input.substr(start, end - start);
    if (current)
      *current = part;
    else
      request.headers.emplace(std::string(name), std::string(part));
  };
  while (pos < input.size()) {
    size_t eol = input.find('\n', pos);
    if (eol == std::string_view::npos) eol = input.size();
    const std::string_view line = input.substr(pos, eol - pos);
    if (line.starts_with(k_header_marker)) {
      finish(pos);
      current = nullptr;
      name = line.substr(k_header_marker.size());
      start = eol + 1 < input.size() ? eol + 1 : input.size();
    }
    pos = eol + 1;
  }
  finish(input.size());
  return request;
}

#ifdef KJIT_FUZZ_HAVE_INCLUDE_LEXER
bool same(const kjit::IncludeDirective& a, const kjit::IncludeDirective& b) {
  return a.kind == b.kind && a.target == b.target && a.angled == b.angled && a.computed == b.computed &&
         a.target_offset == b.target_offset && a.target_length == b.target_length && a.line == b.line;
}

void check_lexer(std::string_view text) {
  const std::vector<kjit::IncludeDirective> all = kjit::scan_include_directives(text);
  // Lines end at LF, and at a lone CR in the GNU reading.
  const size_t max_line = 1 + std::count(text.begin(), text.end(), '\n') + std::count(text.begin(), text.end(), '\r');
  for (size_t i = 0; i < all.size(); ++i) {
    const kjit::IncludeDirective& directive = all[i];
    // Offsets point into the scanned text, so callers may slice it.
    FUZZ_CHECK(directive.target_offset <= text.size());
    FUZZ_CHECK(directive.target_length <= text.size() - directive.target_offset);
    FUZZ_CHECK(directive.line >= 1 && directive.line <= max_line);
    if (i > 0) FUZZ_CHECK(all[i - 1].target_offset <= directive.target_offset);
  }
  // The union skips readings it judges cannot differ (no "??" in the text,
  // no raw string, ...). Every directive of every language's reading, GNU
  // or not, operands as header names or as tokens, must still be in it:
  // otherwise a text could hide an include from the policy.
  for (const auto& [trigraphs, raw_strings, digit_separators] :
       {std::array{true, false, false}, std::array{true, true, false}, std::array{true, true, true},
        std::array{false, true, true}}) {
    for (bool gnu_lines : {false, true}) {
      for (bool as_tokens : {false, true}) {
        kjit::IncludeScanDialect dialect;
        dialect.trigraphs = trigraphs;
        dialect.raw_strings = raw_strings;
        dialect.digit_separators = digit_separators;
        dialect.gnu_lines = gnu_lines;
        dialect.header_names_as_tokens = as_tokens;
        for (const kjit::IncludeDirective& directive : kjit::scan_include_directives_in_dialect(text, dialect)) {
          const bool in_union =
              std::any_of(all.begin(), all.end(), [&](const kjit::IncludeDirective& d) { return same(d, directive); });
          if (!in_union)
            std::fprintf(stderr, "dialect trigraphs=%d raw=%d separators=%d gnu=%d tokens=%d: '%s' at %zu missing\n",
                         trigraphs, raw_strings, digit_separators, gnu_lines, as_tokens, directive.target.c_str(),
                         directive.target_offset);
          FUZZ_CHECK(in_union);
        }
      }
    }
  }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Request request = split(input);
#ifdef KJIT_FUZZ_HAVE_INCLUDE_LEXER
  // The whole input covers every text the policy scans below; scanning the
  // parts again would triple the time per input and reach nothing new.
  check_lexer(input);
#endif
  kjit::Status policy = kjit::check_include_policy(request.source, "input.cu", request.headers);
  if (!policy) {
    FUZZ_CHECK_REFUSED(policy.error());
    // Names from the request are escaped in messages, so that a refused one
    // cannot forge a log line.
    const std::string& message = policy.error().message;
    const bool printable = std::none_of(message.begin(), message.end(),
                                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
    if (!printable) std::fprintf(stderr, "message with control characters: %zu bytes\n", message.size());
    FUZZ_CHECK(printable);
  }
  return 0;
}
