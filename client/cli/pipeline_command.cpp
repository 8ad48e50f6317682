#include "client/cli/pipeline_command.h"

#include <cstdio>

#include "client/cli/exit_codes.h"
#include "kjit/client.h"

namespace kjit::cli {

CLI::App* add_pipeline_command(CLI::App& app, PipelineShowArgs& args, CLI::App** show) {
  CLI::App* cmd = app.add_subcommand("pipeline", "inspect the daemon's pipelines");
  cmd->require_subcommand(1);
  *show = cmd->add_subcommand("show", "print the effective pipeline for an input kind, as TOML");
  (*show)->add_option("--input", args.input, "cuda-source, hip-source, ptx, llvm-ir, llvm-bitcode");
  (*show)->add_option("--target,-t", args.target, "target, e.g. cuda:90 or hip:gfx90a: its vendor picks the default pipeline");
  (*show)->add_option("--pipeline", args.pipeline, "a named pipeline (default: the input's default)");
  return cmd;
}

int run_pipeline_show(const PipelineShowArgs& args, const Connection& connection) {
  std::optional<InputKind> input = parse_input_kind(args.input);
  if (!input) {
    std::fprintf(stderr, "kjit pipeline show: unknown input kind '%s'\n", args.input.c_str());
    return k_exit_usage;
  }
  Client client = connection.client(std::chrono::seconds(30));
  Result<PipelineDescription> description = client.describe_pipeline(*input, args.target, args.pipeline);
  if (!description) return report_error(description.error(), connection.target);
  std::fputs(description->toml.c_str(), stdout);
  return k_exit_ok;
}

}  // namespace kjit::cli
