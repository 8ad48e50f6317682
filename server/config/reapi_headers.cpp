// "Name: value" into gRPC metadata (see reapi_headers.h).
#include "server/config/reapi_headers.h"

#include <algorithm>
#include <cctype>

namespace kjit {

std::optional<std::pair<std::string, std::string>> parse_reapi_header(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == 0 || colon == std::string_view::npos || text.find_first_of("\r\n") != std::string_view::npos)
    return std::nullopt;
  std::string name(text.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view value = text.substr(colon + 1);
  value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
  return std::make_pair(std::move(name), std::string(value));
}

}  // namespace kjit
