// The daemon's include policy: refuses any request whose source or headers
// could make NVRTC read a file of the daemon's host.
//
// NVRTC resolves includes against the file system as well as the request's
// headers, so every include (and __has_include, which probes the host's
// files) must name a relative path without ".." segments, and computed
// includes (`#include MACRO`) are refused since their name is unknown before
// preprocessing. Directives are found by the shared include lexer
// (source/include_lexer.h), which reads the text under every dialect NVRTC
// may use, so no spelling of a directive slips past.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

// invalid_argument naming the file, line and directive that is refused.
Status check_include_directives(std::string_view text, std::string_view file_name);

// Checks the names first (the source's and every header's: NVRTC resolves a
// quoted include next to the file that contains it, so an absolute or
// climbing name would be as bad as such an include), then the directives of
// the source and of every header.
Status check_include_policy(std::string_view source, std::string_view source_name,
                            const std::map<std::string, std::string>& headers);

}  // namespace kjit
