// `kjit warm`: build every recorded recipe for a target, and the operator's
// seal on compiles after warm-up (--seal, --unseal).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "client/cli/connection.h"

namespace kjit::cli {

struct WarmArgs {
  std::string target;
  std::string ns;
  std::string since;
  std::string recipes_file;
  bool json = false;
  bool seal = false;
  bool unseal = false;
  std::string after_warmup;
};

CLI::App* add_warm_command(CLI::App& app, WarmArgs& args);
int run_warm(const WarmArgs& args, const Connection& connection);

}  // namespace kjit::cli
