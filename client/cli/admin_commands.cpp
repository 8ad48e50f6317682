#include "client/cli/admin_commands.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/cli/exit_codes.h"
#include "kjit/client.h"

namespace kjit::cli {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

int run_reload(const AdminArgs& args, const Connection& connection) {
  Result<ReloadResult> reloaded = connection.client(std::chrono::seconds(30)).reload();
  // A refused reload says why (the file, the line); kjitd serves on unchanged.
  if (!reloaded) return report_error(reloaded.error(), connection.target);
  if (args.json) {
    std::printf(
        "%s\n",
        nlohmann::json{{"reloaded", reloaded->reloaded}, {"needs_restart", reloaded->needs_restart}}.dump().c_str());
    return k_exit_ok;
  }
  std::printf("reloaded: %s\n", reloaded->reloaded.empty() ? "nothing" : joined(reloaded->reloaded).c_str());
  if (!reloaded->needs_restart.empty())
    std::printf("waiting for a restart (the old values stay in force): %s\n", joined(reloaded->needs_restart).c_str());
  return k_exit_ok;
}

}  // namespace

CLI::App* add_admin_command(CLI::App& app, AdminArgs& args) {
  CLI::App* admin = app.add_subcommand("admin", "the operator's actions on kjitd itself");
  admin->require_subcommand(1);
  args.reload = admin->add_subcommand(
      "reload",
      "kjitd reads its configuration again, as on SIGHUP: the tenants file, the TCP listener's TLS files, the log "
      "file and every key that can change while it serves; a file that does not parse keeps the old configuration");
  args.reload->add_flag("--json", args.json, "print what was reloaded as JSON");
  // Connection options given after `reload` are admin's.
  args.reload->fallthrough();
  return admin;
}

int run_admin(const AdminArgs& args, const Connection& connection) {
  if (args.reload && *args.reload) return run_reload(args, connection);
  return k_exit_usage;
}

}  // namespace kjit::cli
