// `kjit compile FILE ...`: send a .cu or .ptx file to kjitd, write the cubin
// (or PTX), optionally print the response's metadata as JSON.
#pragma once

#include <optional>
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "client/cli/connection.h"
#include "kjit/client.h"

namespace kjit::cli {

struct CompileArgs {
  std::string file;
  std::string target;
  std::string output;
  std::string kind;  // overrides the extension: cuda-source, ptx
  bool ptx = false;
  bool json = false;
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
  std::string pipeline;
  std::vector<std::string> pass_args;  // PASS.KEY=VALUE
  bool allow_ptx_fallback = false;
  std::vector<std::string> triton_options;  // NAME=VALUE
  std::string triton_build;
  std::vector<std::string> triton_edits;  // OP:ANCHOR[:PASS], override-stage:STAGE:PASS,...
  std::vector<std::string> triton_plugins_off;  // plugin names, "*"

};

CLI::App* add_compile_command(CLI::App& app, CompileArgs& args);

// One --triton-edit: "disable:ttgir/tritongpu-coalesce",
// "insert-after:ANCHOR:PASS", "override-stage:ttgir:cse,canonicalize". Its
// shape only; the daemon checks the op, the names and whether it can act.
Result<TritonEdit> parse_triton_edit(const std::string& text);

// The request `kjit compile` would send for these arguments (input file read,
// headers under -I resolved); a usage problem comes back as invalid_argument.
Result<CompileRequest> build_compile_request(const CompileArgs& args);

// --kind, or else the file's extension; nullopt when neither says.
std::optional<InputKind> input_kind_of(const CompileArgs& args);
int run_compile(const CompileArgs& args, const Connection& connection);
// The same, for a process that ends with the command: exits with its code
// without shutting gRPC down (see compile_command.cpp), after flushing stdio.
[[noreturn]] void run_compile_and_exit(const CompileArgs& args, const Connection& connection);

}  // namespace kjit::cli
