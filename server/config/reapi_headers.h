// The REAPI tier's extra headers ([cache.reapi] headers): each written
// "Name: value", checked when the configuration is read and sent as gRPC
// metadata, whose names are lowercase.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace kjit {

// (name lowercased, value without the spaces after the colon), or nullopt
// when the text is not "Name: value" (no name, no colon, or a line break).
std::optional<std::pair<std::string, std::string>> parse_reapi_header(std::string_view text);

}  // namespace kjit
