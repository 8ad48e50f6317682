#include "backends/ptx/ptx_retarget.h"

#include <charconv>

namespace kjit {
namespace {

struct Directive {
  size_t value_begin = std::string_view::npos, value_end = 0;
};

// Finds a directive at the start of a line (after whitespace) and the span of
// its first operand.
Directive find_directive(std::string_view ptx, std::string_view name) {
  size_t pos = 0;
  while (pos < ptx.size()) {
    size_t eol = ptx.find('\n', pos);
    if (eol == std::string_view::npos) eol = ptx.size();
    size_t start = ptx.find_first_not_of(" \t", pos);
    if (start < eol && ptx.substr(start, name.size()) == name &&
        (start + name.size() < eol && (ptx[start + name.size()] == ' ' || ptx[start + name.size()] == '\t'))) {
      size_t begin = ptx.find_first_not_of(" \t", start + name.size());
      size_t end = begin;
      while (end < eol && ptx[end] != ',' && ptx[end] != ' ' && ptx[end] != '\t' && ptx[end] != '\r' && ptx[end] != '/')
        ++end;
      return {begin, end};
    }
    pos = eol + 1;
  }
  return {};
}

int version_number(std::string_view v) {  // "8.5" -> 85
  size_t dot = v.find('.');
  int major = 0, minor = 0;
  std::from_chars(v.data(), v.data() + (dot == std::string_view::npos ? v.size() : dot), major);
  if (dot != std::string_view::npos) std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor);
  return major * 10 + minor;
}

}  // namespace

Result<PtxHeader> read_ptx_header(std::string_view ptx) {
  Directive version = find_directive(ptx, ".version");
  Directive target = find_directive(ptx, ".target");
  if (version.value_begin == std::string_view::npos || target.value_begin == std::string_view::npos)
    return make_error(ErrorCode::invalid_argument, "PTX has no .version or .target directive");
  return PtxHeader{std::string(ptx.substr(version.value_begin, version.value_end - version.value_begin)),
                   std::string(ptx.substr(target.value_begin, target.value_end - target.value_begin))};
}

Result<std::string> retarget_ptx(std::string_view ptx, std::string_view target, std::string_view min_version) {
  Directive version = find_directive(ptx, ".version");
  Directive target_directive = find_directive(ptx, ".target");
  if (version.value_begin == std::string_view::npos || target_directive.value_begin == std::string_view::npos)
    return make_error(ErrorCode::invalid_argument, "ptx-retarget: PTX has no .version or .target directive");
  std::string_view current_version = ptx.substr(version.value_begin, version.value_end - version.value_begin);
  std::string_view new_version = version_number(min_version) > version_number(current_version) ? min_version : current_version;

  // Replace the later span first so the earlier offsets stay valid.
  std::string out(ptx);
  auto replace = [&](const Directive& d, std::string_view with) {
    out.replace(d.value_begin, d.value_end - d.value_begin, with);
  };
  if (target_directive.value_begin > version.value_begin) {
    replace(target_directive, target);
    replace(version, new_version);
  } else {
    replace(version, new_version);
    replace(target_directive, target);
  }
  return out;
}

}  // namespace kjit
