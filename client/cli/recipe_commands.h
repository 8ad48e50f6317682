// `kjit recipes ls | show DIGEST | rm DIGEST`: the requests the daemon
// compiled, kept without their targets.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "client/cli/connection.h"

namespace kjit::cli {

struct RecipeArgs {
  CLI::App* ls = nullptr;
  CLI::App* show = nullptr;
  CLI::App* rm = nullptr;
  std::string ns;
  std::string since;
  uint32_t limit = 0;
  std::string digest;
  bool json = false;
};

CLI::App* add_recipes_command(CLI::App& app, RecipeArgs& args);
int run_recipes(const RecipeArgs& args, const Connection& connection);

// "2026-12-01", "2026-12-01T10:00:00" (UTC), or seconds since the epoch.
std::optional<int64_t> parse_since(const std::string& text);

}  // namespace kjit::cli
