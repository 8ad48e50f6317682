// `kjit plan` (the launch plan without launching) and `kjit launch` (launch
// on the daemon's GPU with arguments from the command line).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "client/cli/compile_command.h"

namespace kjit::cli {

struct LaunchArgsCli {
  CompileArgs compile;  // FILE, --target, -I, -D, ...
  std::string key;      // instead of FILE
  std::string device_target;  // several targets: the GPU to plan for
  std::string kernel;
  std::string grid = "1", block, cluster;  // block "": one thread, or a Triton kernel's own
  uint32_t dynamic_smem = 0;
  bool cooperative = false, pdl = false, json = false;
  int priority = 0;
  std::vector<std::string> args;  // --arg f32:1.5, --arg buf:in.bin, --arg zeros:4096
  std::vector<int> outs;          // --out N: return argument N's buffer
  std::string out_dir = ".";
};

CLI::App* add_plan_command(CLI::App& app, LaunchArgsCli& args);
CLI::App* add_launch_command(CLI::App& app, LaunchArgsCli& args);
int run_plan(const LaunchArgsCli& args, const Connection& connection);
int run_launch(const LaunchArgsCli& args, const Connection& connection);

}  // namespace kjit::cli
