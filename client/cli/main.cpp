// kjit: the command line client of kjitd.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "client/cli/admin_commands.h"
#include "client/cli/cache_commands.h"
#include "client/cli/compile_command.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/launch_commands.h"
#include "client/cli/manual_pages.h"
#include "client/cli/pipeline_command.h"
#include "client/cli/recipe_commands.h"
#include "client/cli/toolkits_command.h"
#include "client/cli/warm_command.h"
#include "kjit/client.h"

namespace {

void print_status(const kjit::DaemonStatus& s) {
  std::printf("version: %s\n", s.version.c_str());
  std::printf("confinement: %s\n", s.confinement_mode.c_str());
  std::printf("  %s\n", s.confinement.c_str());
  if (s.confinement_mode != "in-process")
    std::printf("  last worker: %s\n",
                s.worker_confinement.empty() ? "none started yet" : s.worker_confinement.c_str());
  std::printf("workers: %u at most, %u running (%u ready, %u compiling), %llu started", s.max_workers,
              s.live_workers, s.ready_workers, s.busy_workers, static_cast<unsigned long long>(s.workers_started));
  if (s.workers_started) std::printf(", last ready in %.1f ms", s.last_worker_start_ms);
  if (!s.live_workers_by_class.empty()) {
    std::string classes;
    for (const auto& [name, live] : s.live_workers_by_class)
      classes += (classes.empty() ? "" : ", ") + std::to_string(live) + " " + name;
    std::printf("\n  by class: %s", classes.c_str());
  }
  std::printf("\nbounds per compile: memory %llu bytes, CPU %llu s, %llu open files, output %llu bytes, "
              "time %llu s\n",
              static_cast<unsigned long long>(s.memory_bytes), static_cast<unsigned long long>(s.cpu_seconds),
              static_cast<unsigned long long>(s.open_files), static_cast<unsigned long long>(s.output_bytes),
              static_cast<unsigned long long>(s.timeout_seconds));
  if (!s.cache_tiers.empty()) {
    std::string tiers;
    for (const std::string& tier : s.cache_tiers) tiers += (tiers.empty() ? "" : " → ") + tier;
    std::printf("cache: %s\n  %s\n", tiers.c_str(), s.cache_sharing.c_str());
  }
  if (!s.fleet.targets.empty()) {
    std::string targets;
    for (const std::string& target : s.fleet.targets) targets += (targets.empty() ? "" : ", ") + target;
    const auto n = [](uint64_t v) { return static_cast<unsigned long long>(v); };
    std::printf("fleet builds (%s): %llu queued, %llu running; since start %llu compiled, %llu already cached, "
                "%llu failed, %llu dropped (queue full), %llu waited for clients\n",
                targets.c_str(), n(s.fleet.queued), n(s.fleet.running), n(s.fleet.compiled), n(s.fleet.cached),
                n(s.fleet.failed), n(s.fleet.dropped), n(s.fleet.yielded));
    if (!s.fleet.last_failure.empty()) std::printf("  last failure: %s\n", s.fleet.last_failure.c_str());
  }
  // The daemon sends its configuration to the local operator only.
  if (!s.settings.empty()) {
    std::printf("configuration:\n");
    for (const kjit::DaemonStatus::Setting& setting : s.settings)
      std::printf("  %s = %s%s%s\n", setting.key.c_str(), setting.value.empty() ? "\"\"" : setting.value.c_str(),
                  setting.flag.empty() ? "" : "  # ", setting.flag.c_str());
  }
}

int run_health(const kjit::cli::Connection& connection, bool verbose) {
  kjit::Client client = connection.client(std::chrono::seconds(10));
  kjit::Result<std::string> health = client.health();
  if (!health) return kjit::cli::report_error(health.error(), connection.target);
  std::printf("%s\n", health->c_str());
  if (verbose) {
    kjit::Result<kjit::DaemonStatus> status = client.status();
    if (!status) return kjit::cli::report_error(status.error(), connection.target);
    print_status(*status);
  }
  return *health == "SERVING" ? kjit::cli::k_exit_ok : kjit::cli::k_exit_compile_error;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kjit — client of the kjit JIT kernel compilation daemon"};
  app.require_subcommand(1);
  kjit::cli::ConnectionFlags connection_flags;
  const std::string connection_group(kjit::cli::k_connection_group);
  kjit::cli::add_connection_options(app, connection_flags, connection_group);

  // Added in the order of the manual's pages, which --help groups them by.
  kjit::cli::CompileArgs compile_args;
  CLI::App* compile = kjit::cli::add_compile_command(app, compile_args);
  kjit::cli::ToolkitsArgs toolkits_args;
  CLI::App* toolkits = kjit::cli::add_toolkits_command(app, toolkits_args);
  kjit::cli::PipelineShowArgs pipeline_args;
  CLI::App* pipeline_show = nullptr;
  CLI::App* pipeline = kjit::cli::add_pipeline_command(app, pipeline_args, &pipeline_show);
  kjit::cli::CacheArgs cache_args;
  CLI::App* cache = kjit::cli::add_cache_command(app, cache_args);
  kjit::cli::RecipeArgs recipe_args;
  CLI::App* recipes = kjit::cli::add_recipes_command(app, recipe_args);
  kjit::cli::WarmArgs warm_args;
  CLI::App* warm = kjit::cli::add_warm_command(app, warm_args);
  kjit::cli::LaunchArgsCli plan_args, launch_args;
  CLI::App* plan = kjit::cli::add_plan_command(app, plan_args);
  CLI::App* launch = kjit::cli::add_launch_command(app, launch_args);
  CLI::App* health = app.add_subcommand("health", "ask kjitd whether it is serving");
  bool health_verbose = false;
  health->add_flag("--verbose,-v", health_verbose, "also how compiles are confined and bounded");
  kjit::cli::AdminArgs admin_args;
  CLI::App* admin = kjit::cli::add_admin_command(app, admin_args);
  // The connection options are accepted after the subcommand too.
  for (CLI::App* command : {compile, health, pipeline_show, cache, plan, launch, toolkits, admin, recipes, warm})
    kjit::cli::add_connection_options(*command, connection_flags, connection_group);
  kjit::cli::add_manual_pointers(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kjit::cli::k_exit_usage;
  }

  kjit::Result<kjit::cli::Connection> resolved = kjit::cli::resolve_connection(connection_flags);
  if (!resolved) return kjit::cli::usage_error(app.get_subcommands().front()->get_name(), resolved.error().message);
  const kjit::cli::Connection& connection = *resolved;
  // The command that build scripts run once per kernel: it skips gRPC's
  // shutdown at the end, a measurable part of a cache hit's time.
  if (*compile) kjit::cli::run_compile_and_exit(compile_args, connection);
  if (*health) return run_health(connection, health_verbose);
  if (*cache) return kjit::cli::run_cache(cache_args, connection);
  if (*plan) return kjit::cli::run_plan(plan_args, connection);
  if (*launch) return kjit::cli::run_launch(launch_args, connection);
  if (*toolkits) return kjit::cli::run_toolkits(toolkits_args, connection);
  if (*admin) return kjit::cli::run_admin(admin_args, connection);
  if (*recipes) return kjit::cli::run_recipes(recipe_args, connection);
  if (*warm) return kjit::cli::run_warm(warm_args, connection);
  if (*pipeline && *pipeline_show) return kjit::cli::run_pipeline_show(pipeline_args, connection);
  return kjit::cli::k_exit_usage;
}
