#include "client/cli/compile_command.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "client/cli/compile_json.h"
#include "client/cli/exit_codes.h"
#include "client/include_resolver.h"
#include "convert/input_kind_names.h"
#include "convert/wire_convert.h"
#include "core/input_kinds.h"
#include "kjit/client.h"

namespace kjit::cli {
namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// --kind, or else the file's extension, read as the Python client reads them:
// names, aliases and extensions come from the wire's InputKind descriptor.
std::optional<InputKind> kind_of(const CompileArgs& args) {
  std::string extension = std::filesystem::path(args.file).extension().string();
  std::optional<v1::InputKind> wire =
      args.kind.empty() ? wire_input_kind_of_extension(extension) : parse_wire_input_kind(args.kind);
  if (!wire) return std::nullopt;
  return from_proto(*wire);
}

}  // namespace

std::optional<InputKind> input_kind_of(const CompileArgs& args) { return kind_of(args); }

CLI::App* add_compile_command(CLI::App& app, CompileArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "compile", "compile CUDA C++ (.cu), PTX (.ptx), LLVM IR (.ll, .bc) or Triton IR (.ttir, .ttgir) to a cubin, or "
                 "HIP (.hip), LLVM IR or Triton IR to an AMD code object (hsaco) for a hip: target");
  cmd->add_option("file", args.file, "input file (" + wire_input_kind_extensions() + ")")->required();
  cmd->add_option("--target,-t", args.target,
                  "target, e.g. cuda:90 or hip:gfx90a (default: the daemon's); several, comma-separated, give a "
                  "fatbin (cuda:80,cuda:90,cuda:100) or a code-object bundle (hip:gfx90a,hip:gfx942)");
  cmd->add_option("-o,--output", args.output,
                  "output file (default: <input stem>.cubin, .ptx, .fatbin, .hsaco or .hip-bundle)");
  cmd->add_flag("--ptx", args.ptx, "stop at PTX");
  cmd->add_flag("--json", args.json, "print the response's metadata as one JSON object");
  cmd->add_option("-I,--include-dir", args.include_dirs, "search DIR for included headers (sent with the request)");
  cmd->add_option("-D,--define", args.defines, "define a macro: NAME or NAME=VALUE");
  cmd->add_option("--name-expr", args.name_expressions, "a template instantiation to compile, e.g. 'scale<float>'");
  cmd->add_option("--option,-X", args.options, "a compiler option to pass, e.g. -X=-lineinfo");
  cmd->add_option("--kind", args.kind,
                  "input kind when the extension does not say: " + wire_input_kind_names() +
                      " (or an alias: " + wire_input_kind_aliases() + ")");
  cmd->add_option("--pipeline", args.pipeline, "a named pipeline from the daemon's configuration or a plugin");
  cmd->add_option("--pass-arg", args.pass_args, "a pass argument PASS.KEY=VALUE, e.g. llvm-passes.pipeline=default<O2>");
  cmd->add_flag("--allow-ptx-fallback", args.allow_ptx_fallback,
                "when the toolkit cannot build a cubin for the target, accept PTX for the driver to JIT");
  cmd->add_option("--triton-option", args.triton_options,
                  "Triton input (.ttir, .ttgir): one of Triton's compile options, NAME=VALUE, e.g. num_warps=8 "
                  "(VALUE an integer, true/false, or text)");
  cmd->add_option("--triton", args.triton_build,
                  "Triton input: the Triton build to compile with, as `kjit toolkits` names it (default: the daemon's)");
  cmd->add_option("--triton-edit", args.triton_edits,
                  "Triton input: an edit to the build's stages after the daemon's, OP:ANCHOR[:PASS] "
                  "(disable:ttgir/tritongpu-coalesce, insert-after:ttgir/tritongpu-coalesce:cse) or "
                  "override-stage:STAGE:PASS,PASS,...");
  cmd->add_option("--triton-plugin-off", args.triton_plugins_off,
                  "Triton input: switch one of the build's plugins off for this kernel, as `kjit toolkits` names it "
                  "(triton-utlx, a configured library's path; \"*\": all)");
  return cmd;
}

Result<TritonEdit> parse_triton_edit(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream fields(text);
  for (std::string part; std::getline(fields, part, ':');) parts.push_back(part);
  if (!text.empty() && text.back() == ':') parts.emplace_back();
  TritonEdit edit;
  if (parts.size() >= 2) edit.op = parts[0];
  if (edit.op == "override-stage" && parts.size() == 3) {
    edit.stage = parts[1];
    std::stringstream passes(parts[2]);
    for (std::string pass; std::getline(passes, pass, ',');) edit.passes.push_back(pass);
    return edit;
  }
  if (edit.op != "override-stage" && (parts.size() == 2 || parts.size() == 3)) {
    edit.anchor = parts[1];
    if (parts.size() == 3) edit.pass = parts[2];
    return edit;
  }
  return make_error(ErrorCode::invalid_argument,
                    "--triton-edit wants OP:ANCHOR[:PASS] or override-stage:STAGE:PASS,..., got '" + text + "'");
}

Result<CompileRequest> build_compile_request(const CompileArgs& args) {
  auto usage = [](std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); };
  std::optional<InputKind> kind = kind_of(args);
  if (!kind) {
    if (!args.kind.empty())
      return usage("unknown input kind '" + args.kind + "'; one of " + wire_input_kind_names() + " (or an alias: " +
                   wire_input_kind_aliases() + ")");
    return usage("cannot tell the input kind of '" + args.file + "': its extension is none of " +
                 wire_input_kind_extensions() + "; use --kind");
  }
  if (args.ptx && *kind == InputKind::ptx) return usage("--ptx: the input is PTX already");
  std::optional<std::string> source = read_file(args.file);
  if (!source) return usage("cannot read " + args.file);

  CompileRequest request;
  request.input_kind = *kind;
  request.input = std::move(*source);
  request.input_name = std::filesystem::path(args.file).filename().string();
  if (args.target.find(',') == std::string::npos) {
    request.target = args.target;
    request.artifact = args.ptx ? ArtifactKind::ptx : ArtifactKind::cubin;
  } else {
    if (args.ptx) return usage("--ptx: several targets give a fatbin, which holds PTX for the newest");
    std::stringstream list(args.target);
    for (std::string target; std::getline(list, target, ',');) {
      if (target.empty()) return usage("--target '" + args.target + "' has an empty entry");
      request.targets.push_back(target);
    }
    // Several targets: a fatbin for cuda: ones, a code-object bundle for
    // hip: ones; the daemon picks by vendor.
    request.artifact = ArtifactKind::cubin;
  }
  request.name_expressions = args.name_expressions;
  request.pipeline = args.pipeline;
  request.allow_ptx_fallback = args.allow_ptx_fallback;
  for (const std::string& pass_arg : args.pass_args) {
    size_t eq = pass_arg.find('=');
    if (eq == std::string::npos || pass_arg.find('.') > eq) return usage("--pass-arg wants PASS.KEY=VALUE, got '" + pass_arg + "'");
    request.pass_args[pass_arg.substr(0, eq)] = pass_arg.substr(eq + 1);
  }
  const bool triton = input_kind_info(*kind).options == OptionFamily::triton;
  if (!triton && (!args.triton_options.empty() || !args.triton_build.empty() || !args.triton_edits.empty() ||
                  !args.triton_plugins_off.empty()))
    return usage("--triton-option, --triton, --triton-edit and --triton-plugin-off apply to Triton input (.ttir, .ttgir) only");
  request.triton_plugins_off = args.triton_plugins_off;
  for (const std::string& text : args.triton_edits) {
    Result<TritonEdit> edit = parse_triton_edit(text);
    if (!edit) return edit.error();
    request.triton_edits.push_back(std::move(*edit));
  }
  for (const std::string& option : args.triton_options) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0) return usage("--triton-option wants NAME=VALUE, got '" + option + "'");
    request.triton_options[option.substr(0, eq)] = option.substr(eq + 1);
  }
  request.triton_build = args.triton_build;
  for (const std::string& define : args.defines) request.options.push_back("-D" + define);
  request.options.insert(request.options.end(), args.options.begin(), args.options.end());

  if (input_kind_info(*kind).source) {
    std::vector<std::filesystem::path> dirs(args.include_dirs.begin(), args.include_dirs.end());
    Result<ResolvedHeaders> headers = resolve_includes(args.file, request.input, dirs);
    if (!headers) return usage(headers.error().message);
    for (const std::string& warning : headers->warnings) std::fprintf(stderr, "kjit: warning: %s\n", warning.c_str());
    request.headers = std::move(headers->headers);
    // Includes that reach outside the source's tree are renamed on the way.
    request.input = std::move(headers->source);
  } else if (!args.include_dirs.empty()) {
    return usage("-I applies to CUDA C++ and HIP input only");
  }
  return request;
}

namespace {

// The command once the request is built and answered; `client_ms` is how long
// the client took, from its construction to the answer.
int finish_compile(const CompileArgs& args, const Connection& connection, Result<CompileResult>& result,
                   double client_ms) {
  if (!result) return report_error(result.error(), connection.target);

  std::string output = args.output;
  if (output.empty())
    output = std::filesystem::path(args.file).stem().string() + "." + std::string(to_string(result->artifact_kind));
  if (output != "-") {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(result->artifact.data(), static_cast<std::streamsize>(result->artifact.size()));
    if (!out) return usage_error("compile", "cannot write " + output);
  }

  if (args.json) {
    nlohmann::json json = compile_result_to_json(*result);
    json["output"] = output;
    json["client_ms"] = client_ms;
    std::cout << json.dump() << std::endl;
  } else {
    if (output == "-") std::cout.write(result->artifact.data(), static_cast<std::streamsize>(result->artifact.size()));
    if (!result->log.empty()) std::fputs(result->log.c_str(), stderr);
    for (const std::string& note : result->notes) std::fprintf(stderr, "kjit: note: %s\n", note.c_str());
    for (const FatbinEntry& entry : result->entries)
      std::fprintf(stderr, "kjit: %s %s, %llu bytes, %s\n", entry.target.c_str(), std::string(to_string(entry.kind)).c_str(),
                   static_cast<unsigned long long>(entry.size), entry.cache.c_str());
  }
  return k_exit_ok;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

[[noreturn]] void leave(int code) {
  // Any output file is closed by now; what may remain buffered is stdio's.
  std::cout.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace

int run_compile(const CompileArgs& args, const Connection& connection) {
  Result<CompileRequest> built = build_compile_request(args);
  if (!built) return usage_error("compile", built.error().message);
  auto start = std::chrono::steady_clock::now();
  Client client = connection.client();
  Result<CompileResult> result = client.compile(*built);
  return finish_compile(args, connection, result, ms_since(start));
}

void run_compile_and_exit(const CompileArgs& args, const Connection& connection) {
  Result<CompileRequest> built = build_compile_request(args);
  if (!built) leave(usage_error("compile", built.error().message));
  auto start = std::chrono::steady_clock::now();
  // Never destroyed: destroying the last client shuts gRPC down, which wakes
  // and joins the threads gRPC started and tears down its state, all of it
  // pure cost at the end of a one-shot process (and, on a busy host, waits on
  // the scheduler once per thread). The kernel reclaims it all at exit.
  Client* client = new Client(connection.client());
  Result<CompileResult> result = client->compile(*built);
  leave(finish_compile(args, connection, result, ms_since(start)));
}

}  // namespace kjit::cli
