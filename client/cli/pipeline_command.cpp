#include "client/cli/pipeline_command.h"

#include <cstdio>

#include "client/cli/exit_codes.h"
#include "convert/input_kind_names.h"
#include "convert/wire_convert.h"
#include "kjit/client.h"

namespace kjit::cli {

CLI::App* add_pipeline_command(CLI::App& app, PipelineShowArgs& args, CLI::App** show) {
  CLI::App* cmd = app.add_subcommand("pipeline", "inspect the daemon's pipelines");
  cmd->require_subcommand(1);
  *show = cmd->add_subcommand("show", "print the effective pipeline for an input kind, as TOML");
  (*show)->add_option("--input", args.input,
                      wire_input_kind_names() + " (or an alias: " + wire_input_kind_aliases() + ")");
  (*show)->add_option("--target,-t", args.target, "target, e.g. cuda:90 or hip:gfx90a: its vendor picks the default pipeline");
  (*show)->add_option("--pipeline", args.pipeline, "a named pipeline (default: the input's default)");
  return cmd;
}

int run_pipeline_show(const PipelineShowArgs& args, const Connection& connection) {
  // The same spellings as compile's --kind, from the wire's descriptor.
  std::optional<v1::InputKind> wire = parse_wire_input_kind(args.input);
  std::optional<InputKind> input = wire ? from_proto(*wire) : std::nullopt;
  if (!input) {
    std::fprintf(stderr, "kjit pipeline show: unknown input kind '%s'\n", args.input.c_str());
    return k_exit_usage;
  }
  // Triton's pipeline is described by its build, which a daemon just
  // started may still be looking for (a second or more each, more on a busy
  // machine), as `kjit toolkits` waits for it.
  Client client = connection.client(std::chrono::seconds(180));
  Result<PipelineDescription> description = client.describe_pipeline(*input, args.target, args.pipeline);
  if (!description) return report_error(description.error(), connection.target);
  std::fputs(description->toml.c_str(), stdout);
  return k_exit_ok;
}

}  // namespace kjit::cli
