// The command line every kjit benchmark takes (--reps N, --help), read with
// CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace kjit::bench {

struct BenchOptions {
  int reps = 15;
};

// The options, or nullopt with `exit_code` set (0 after --help, 2 on a
// usage error) when the program should stop.
inline std::optional<BenchOptions> parse_bench_options(int argc, char** argv, const std::string& description,
                                                       int default_reps, int& exit_code) {
  BenchOptions options;
  options.reps = default_reps;
  CLI::App app{description};
  app.add_option("--reps", options.reps, "repetitions per kernel and way")->check(CLI::Range(1, 100000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e) == 0 ? 0 : 2;
    return std::nullopt;
  }
  return options;
}

}  // namespace kjit::bench
