// `kjit toolkits`: the CUDA toolkits kjitd found (system, NVIDIA's wheels,
// the project's prefix, configured ones), what each can build, and which
// toolkit builds each target.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "client/cli/connection.h"

namespace kjit::cli {

struct ToolkitsArgs {
  bool json = false;
};

CLI::App* add_toolkits_command(CLI::App& app, ToolkitsArgs& args);
int run_toolkits(const ToolkitsArgs& args, const Connection& connection);

}  // namespace kjit::cli
