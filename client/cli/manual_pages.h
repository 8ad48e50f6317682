// Where the manual explains each kjit command: --help groups the commands by
// the manual's pages and each command's help ends with its page, from this
// one table.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

namespace kjit::cli {

struct ManualPage {
  std::string_view command;  // a top-level subcommand
  std::string_view group;    // its heading in kjit --help
  std::string_view page;     // relative to the repository
};

inline constexpr ManualPage k_manual_pages[] = {
    {"compile", "Compiling (docs/using.md)", "docs/using.md#the-command-line"},
    {"toolkits", "Compiling (docs/using.md)", "docs/targets-and-toolchains.md#cuda-toolkits-and-many-targets"},
    {"pipeline", "Compiling (docs/using.md)", "docs/pipelines-and-plugins.md#pipelines"},
    {"cache", "The cache (docs/cache.md)", "docs/cache.md#inspecting-and-maintaining-the-cache"},
    {"recipes", "The cache (docs/cache.md)", "docs/cache.md#recipes-and-warm-up"},
    {"warm", "The cache (docs/cache.md)", "docs/cache.md#recipes-and-warm-up"},
    {"plan", "Launching (docs/launching.md)", "docs/launching.md#launch-plans"},
    {"launch", "Launching (docs/launching.md)", "docs/launching.md#launching-on-the-daemons-gpu"},
    {"health", "Operating kjitd (docs/operating.md)", "docs/operating.md#metrics-logs-and-health"},
    {"admin", "Operating kjitd (docs/operating.md)", "docs/operating.md#reloading"},
};

inline constexpr std::string_view k_connection_group = "Connecting to kjitd (docs/using.md#connecting-to-kjitd)";

// Each command's group and footer; a command and its own subcommands
// (kjit cache stats) point to the same page.
inline void add_manual_pointers(CLI::App& app) {
  app.footer(
      "Commands are grouped by the manual's pages (README.md has the map); every command's options are in "
      "docs/cli-reference.md.");
  for (const ManualPage& entry : k_manual_pages) {
    CLI::App* command = app.get_subcommand(std::string(entry.command));
    command->group(std::string(entry.group));
    const std::string footer = "Manual: " + std::string(entry.page);
    command->footer(footer);
    for (CLI::App* sub : command->get_subcommands(std::function<bool(CLI::App*)>())) sub->footer(footer);
  }
}

}  // namespace kjit::cli
