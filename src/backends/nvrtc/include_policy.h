// NVRTC resolves #include against the file system as well as the request's
// headers. So that a request can never make the daemon read its own files,
// every #include in the source and headers must name a relative path without
// ".." segments, and computed includes (#include MACRO) are refused.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

// invalid_argument naming the file, line and directive that is refused.
Status check_include_directives(std::string_view text, std::string_view file_name);

// Checks the main source and every header, and the header names themselves.
Status check_include_policy(std::string_view source, std::string_view source_name,
                            const std::map<std::string, std::string>& headers);

}  // namespace kjit
