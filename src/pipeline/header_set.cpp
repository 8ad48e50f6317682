#include "pipeline/header_set.h"

#include "pipeline/cache_key.h"

namespace kjit {
namespace {

std::string_view trim_front(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

}  // namespace

std::string leading_directives(std::string_view source) {
  std::string out;
  bool in_comment = false;
  while (!source.empty()) {
    const size_t end = source.find('\n');
    std::string_view line = source.substr(0, end);
    source = end == std::string_view::npos ? std::string_view{} : source.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = trim_front(line);
    if (in_comment) {
      const size_t close = line.find("*/");
      if (close == std::string_view::npos) continue;
      in_comment = false;
      line = trim_front(line.substr(close + 2));
    }
    if (line.empty() || line.starts_with("//")) continue;
    if (line.starts_with("/*")) {
      const size_t close = line.find("*/", 2);
      if (close == std::string_view::npos) {
        in_comment = true;
        continue;
      }
      line = trim_front(line.substr(close + 2));
      if (line.empty()) continue;
    }
    if (!line.starts_with('#')) break;  // the source's own code starts here
    out += line;
    out += '\n';
    // A directive continued on the next line stays whole.
    while (!line.empty() && line.back() == '\\' && !source.empty()) {
      const size_t next = source.find('\n');
      line = source.substr(0, next);
      source = next == std::string_view::npos ? std::string_view{} : source.substr(next + 1);
      out += line;
      out += '\n';
    }
  }
  return out;
}

bool includes_a_header(std::string_view directives) {
  while (!directives.empty()) {
    const size_t end = directives.find('\n');
    std::string_view line = directives.substr(0, end);
    directives = end == std::string_view::npos ? std::string_view{} : directives.substr(end + 1);
    if (!line.starts_with('#')) continue;  // a continued directive's next line
    if (trim_front(line.substr(1)).starts_with("include")) return true;
  }
  return false;
}

std::string header_set_digest(std::string_view toolchain, const std::vector<std::string>& options,
                              const std::map<std::string, std::string>& headers, std::string_view directives,
                              std::string_view ns) {
  std::string identity;
  auto add = [&identity](std::string_view part) {
    identity += std::to_string(part.size()) + ":";
    identity += part;
  };
  add(toolchain);
  add(std::to_string(options.size()));
  for (const std::string& option : options) add(option);
  add(std::to_string(headers.size()));
  for (const auto& [name, content] : headers) {
    add(name);
    add(content);
  }
  add(directives);
  // Length-prefixed like every part, so no namespace's name reads as more
  // directives. Toolkit-only sets leave it out: those PCHs are everyone's.
  if (!headers.empty()) add(ns);
  return sha256_hex(identity);
}

}  // namespace kjit
