#include "backends/nvrtc/include_policy.h"

#include <cctype>

namespace kjit {
namespace {

bool escapes_root(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.front() == '\\' || path.find(':') != std::string_view::npos)
    return true;  // absolute, or a drive / URL-like name
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

Error refused(std::string_view file, size_t line, std::string_view directive, std::string_view why) {
  return make_error(ErrorCode::invalid_argument, std::string(file) + ":" + std::to_string(line) + ": '" +
                                                     std::string(directive) + "' is refused: " + std::string(why));
}

}  // namespace

Status check_include_directives(std::string_view text, std::string_view file_name) {
  size_t line_number = 0;
  size_t pos = 0;
  bool in_block_comment = false;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_number;

    if (in_block_comment) {
      size_t close = line.find("*/");
      if (close == std::string_view::npos) continue;
      line.remove_prefix(close + 2);
      in_block_comment = false;
    }
    std::string_view rest = trim_left(line);
    if (rest.starts_with("/*")) {
      size_t close = rest.find("*/", 2);
      if (close == std::string_view::npos) {
        in_block_comment = true;
        continue;
      }
      rest = trim_left(rest.substr(close + 2));
    }
    if (!rest.starts_with("#")) {
      // A block comment opened later on a code line still hides the next lines.
      size_t open = rest.rfind("/*");
      if (open != std::string_view::npos && rest.find("*/", open) == std::string_view::npos &&
          rest.substr(0, open).find("//") == std::string_view::npos)
        in_block_comment = true;
      continue;
    }
    rest = trim_left(rest.substr(1));
    std::string_view keyword;
    if (rest.starts_with("include_next")) keyword = "include_next";
    else if (rest.starts_with("include")) keyword = "include";
    else if (rest.starts_with("import")) keyword = "import";
    else continue;
    rest = trim_left(rest.substr(keyword.size()));
    std::string_view directive = trim_left(line);

    if (rest.empty() || (rest.front() != '"' && rest.front() != '<')) {
      return refused(file_name, line_number, directive,
                     "computed includes cannot be checked; name the header in quotes or angle brackets");
    }
    char close = rest.front() == '"' ? '"' : '>';
    size_t end = rest.find(close, 1);
    if (end == std::string_view::npos) continue;  // malformed: the compiler reports it
    std::string_view path = rest.substr(1, end - 1);
    if (escapes_root(path)) {
      return refused(file_name, line_number, directive,
                     "includes must be relative paths without '..'; send the header in the request instead");
    }
  }
  return Ok{};
}

Status check_include_policy(std::string_view source, std::string_view source_name,
                            const std::map<std::string, std::string>& headers) {
  if (Status s = check_include_directives(source, source_name); !s) return s;
  for (const auto& [name, content] : headers) {
    if (escapes_root(name)) {
      return make_error(ErrorCode::invalid_argument,
                        "header name '" + name + "' is refused: header names must be relative paths without '..'");
    }
    if (Status s = check_include_directives(content, name); !s) return s;
  }
  return Ok{};
}

}  // namespace kjit
