// `kjit pipeline show`: print the pipeline a compile would run, after every
// edit of the daemon's configuration and plugins, as TOML.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "client/cli/connection.h"

namespace kjit::cli {

struct PipelineShowArgs {
  std::string input = "cuda-source";
  std::string target;
  std::string pipeline;
};

CLI::App* add_pipeline_command(CLI::App& app, PipelineShowArgs& args, CLI::App** show);
int run_pipeline_show(const PipelineShowArgs& args, const Connection& connection);

}  // namespace kjit::cli
