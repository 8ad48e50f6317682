// The include policy over the shared include lexer; see include_policy.h.
#include "backends/nvrtc/include_policy.h"

#include <cstdio>

#include "source/include_lexer.h"

namespace kjit {
namespace {

bool is_absolute(std::string_view path) {
  // A drive ("C:") or URL-like ("file:") name counts as absolute too.
  return !path.empty() && (path.front() == '/' || path.front() == '\\' || path.find(':') != std::string_view::npos);
}

bool has_parent_segment(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

bool escapes_root(std::string_view path) {
  return path.empty() || is_absolute(path) || has_parent_segment(path);
}

// Names in messages: control characters escaped, so a refused name cannot
// forge log lines.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

std::string spelled(const IncludeDirective& directive) {
  std::string out;
  switch (directive.kind) {
    case IncludeDirective::Kind::include:
      out = "#include ";
      break;
    case IncludeDirective::Kind::include_next:
      out = "#include_next ";
      break;
    case IncludeDirective::Kind::import:
      out = "import ";
      break;
    case IncludeDirective::Kind::has_include:
      out = "__has_include ";
      break;
  }
  if (directive.computed) return out + printable(directive.target);
  const char open = directive.angled ? '<' : '"';
  const char close = directive.angled ? '>' : '"';
  return out + open + printable(directive.target) + close;
}

Error refused(std::string_view file, const IncludeDirective& directive, std::string_view why) {
  return make_error(ErrorCode::invalid_argument, printable(file) + ":" + std::to_string(directive.line) + ": '" +
                                                     spelled(directive) + "' is refused: " + std::string(why));
}

}  // namespace

Status check_include_directives(std::string_view text, std::string_view file_name) {
  for (const IncludeDirective& directive : scan_include_directives(text)) {
    const bool probe = directive.kind == IncludeDirective::Kind::has_include;
    if (directive.computed) {
      return refused(file_name, directive,
                     probe ? "__has_include must name the header in quotes or angle brackets, not through a macro"
                           : "computed or malformed includes cannot be checked; name the header in quotes or angle "
                             "brackets");
    }
    if (escapes_root(directive.target)) {
      return refused(file_name, directive,
                     probe ? "__has_include must not probe absolute paths or '..'; it would test the daemon's files"
                           : "includes must be relative paths without '..'; send the header in the request instead");
    }
  }
  return Ok{};
}

Status check_include_policy(std::string_view source, std::string_view source_name,
                            const std::map<std::string, std::string>& headers) {
  // An empty source name is NVRTC's default, not a path.
  if (!source_name.empty() && (is_absolute(source_name) || has_parent_segment(source_name))) {
    return make_error(ErrorCode::invalid_argument,
                      "source name '" + printable(source_name) +
                          "' is refused: NVRTC looks for quoted includes next to it, so it must be a relative "
                          "path without '..'");
  }
  for (const auto& [name, content] : headers) {
    if (escapes_root(name)) {
      return make_error(ErrorCode::invalid_argument, "header name '" + printable(name) +
                                                         "' is refused: header names must be relative paths "
                                                         "without '..'");
    }
  }
  if (Status s = check_include_directives(source, source_name); !s) return s;
  for (const auto& [name, content] : headers) {
    if (Status s = check_include_directives(content, name); !s) return s;
  }
  return Ok{};
}

}  // namespace kjit
