// The strings of a JSON array, as the worker script's answers list them
// (paths, pass names); anything else in it, or a value that is no array,
// gives none.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kjit {

inline std::vector<std::string> json_strings(const nlohmann::json& value) {
  std::vector<std::string> out;
  if (value.is_array())
    for (const nlohmann::json& item : value)
      if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}

}  // namespace kjit
