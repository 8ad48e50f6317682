// What every kjit benchmark's main does: the command line (--reps N,
// --help, read with CLI11) and the exit code, with a failure on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

#include "kjit/status.h"

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

// `what: ` before the error's message.
inline Error in_context(const std::string& what, Error error) {
  error.message = what + ": " + error.message;
  return error;
}

// 0 for a run that went through; 1, with "<program>: <message>" and the
// compiler's log on stderr, for one that failed.
inline int exit_code_of(const char* program, const Status& status) {
  if (status) return 0;
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s\n", program, status.error().message.c_str());
  if (!status.error().log.empty()) std::fprintf(stderr, "%s\n", status.error().log.c_str());
  return 1;
}

// main() of a benchmark that takes only the options above.
template <typename Run>
int bench_main(int argc, char** argv, const char* program, const std::string& description, int default_reps, Run run) {
  int exit_code = 0;
  std::optional<BenchOptions> options = parse_bench_options(argc, argv, description, default_reps, exit_code);
  if (!options) return exit_code;
  return exit_code_of(program, run(*options));
}

}  // namespace kjit::bench
