// `kjit admin ...`: the operator's actions on the daemon itself.
// `kjit admin reload` has kjitd read its configuration again, as SIGHUP does.
#pragma once

#include <CLI/CLI.hpp>

#include "client/cli/connection.h"

namespace kjit::cli {

struct AdminArgs {
  CLI::App* reload = nullptr;
  bool json = false;
};

CLI::App* add_admin_command(CLI::App& app, AdminArgs& args);
int run_admin(const AdminArgs& args, const Connection& connection);

}  // namespace kjit::cli
