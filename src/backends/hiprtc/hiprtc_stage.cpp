#include "backends/hiprtc/hiprtc_stage.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <regex>

#include "backends/bundle/offload_bundle.h"

namespace kjit {

namespace {

constexpr std::string_view k_elf_magic = "\177ELF";
constexpr std::string_view k_bundle_magic = "__CLANG_OFFLOAD_BUNDLE__";

bool is_processor_name(std::string_view processor) {
  return processor.size() > 3 && processor.substr(0, 3) == "gfx" &&
         processor.find_first_not_of("0123456789abcdef", 3) == std::string_view::npos;
}

// comgr compiles copies in a scratch directory, so its diagnostics name
// "$TMPDIR/comgr-1c4be4/input/CompileSource" and ".../include/<header>";
// they are put back as the request's name and the header's include name,
// which also keeps a log the same from one compile to the next.
std::string program_log(const HiprtcApi& api, HiprtcProgram program, const std::string& name) {
  size_t size = 0;
  if (api.get_program_log_size(program, &size) != k_hiprtc_success || size == 0) return {};
  std::string log(size, '\0');
  if (api.get_program_log(program, log.data()) != k_hiprtc_success) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  static const std::regex source_path(R"(\S*comgr-[0-9a-f]+/input/CompileSource)");
  static const std::regex include_dir(R"(\S*comgr-[0-9a-f]+/include/)");
  std::string replacement;  // `name` as a regex_replace format: "$" written "$$"
  for (char c : name) replacement += c == '$' ? std::string("$$") : std::string(1, c);
  log = std::regex_replace(log, source_path, replacement);
  return std::regex_replace(log, include_dir, "");
}

// `#line 1 "name"`, the name as a C string literal.
std::string line_directive(const std::string& name) {
  std::string literal;
  for (char c : name) {
    if (c == '"' || c == '\\') literal += '\\';
    if (c == '\n') {
      literal += "\\n";
      continue;
    }
    literal += c;
  }
  return "#line 1 \"" + literal + "\"\n";
}

Error hiprtc_failure(const HiprtcApi& api, HiprtcResult result, std::string what, std::string log = {}) {
  ErrorCode code = ErrorCode::internal;
  if (result == k_hiprtc_error_out_of_memory) code = ErrorCode::resource_exhausted;
  if (result == k_hiprtc_error_invalid_option || result == k_hiprtc_error_name_expression_not_valid ||
      (result == k_hiprtc_error_compilation && !log.empty()))
    code = ErrorCode::invalid_argument;
  const char* result_name = api.get_error_string(result);
  std::string message =
      std::move(what) + " (" + (result_name ? result_name : "hiprtcResult " + std::to_string(result)) + ")";
  if (result == k_hiprtc_error_compilation && log.empty()) {
    // comgr reports its own failures (no writable scratch directory, an
    // option it rejects) as a compile error with nothing in the log.
    const char* tmpdir = std::getenv("TMPDIR");
    message +=
        " with no diagnostic: comgr could not run (is TMPDIR=" + std::string(tmpdir ? tmpdir : "/tmp") + " writable?)";
  }
  if (!log.empty()) message += ":\n" + log;
  return make_error(code, std::move(message), std::move(log));
}

// An option naming a processor would reach comgr unchecked, past the
// allowlist; the processor comes from the request only.
bool selects_processor(std::string_view option) {
  for (std::string_view prefix : {"--offload-arch", "-offload-arch", "--gpu-architecture", "-arch", "-march", "-mcpu",
                                  "--cuda-gpu-arch", "--amdgpu-target", "-mattr", "-target", "--target"})
    if (option.substr(0, prefix.size()) == prefix) return true;
  return false;
}

// "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-" (or the older single-dash
// "hip-amdgcn-amd-amdhsa-gfx90a") names `processor`'s device code.
bool bundle_id_names(std::string_view id, std::string_view processor) {
  const std::string_view kind = id.substr(0, id.find('-'));
  if (kind != "hip" && kind != "hipv4") return false;
  std::string_view target = id.substr(id.find_last_of('-') + 1);
  if (const size_t double_dash = id.find("--"); double_dash != std::string_view::npos)
    target = id.substr(double_dash + 2);
  return target.substr(0, target.find(':')) == processor;
}

}  // namespace

Result<std::string> extract_code_object(std::string_view code, std::string_view processor) {
  if (code.substr(0, k_elf_magic.size()) == k_elf_magic) return std::string(code);
  if (code.substr(0, k_bundle_magic.size()) != k_bundle_magic)
    return make_error(ErrorCode::internal, "HIPRTC returned neither an ELF code object nor an offload bundle");
  Result<std::vector<BundleEntry>> entries = read_offload_bundle(code);
  if (!entries) return make_error(ErrorCode::internal, "HIPRTC returned a malformed offload bundle: " + entries.error().message);
  for (BundleEntry& entry : *entries) {
    if (!bundle_id_names(entry.id, processor)) continue;
    if (std::string_view(entry.bytes).substr(0, k_elf_magic.size()) != k_elf_magic)
      return make_error(ErrorCode::internal,
                        "HIPRTC returned a malformed offload bundle: entry " + entry.id + " is not an ELF code object");
    return std::move(entry.bytes);
  }
  return make_error(ErrorCode::internal, "HIPRTC's offload bundle holds no code object for " + std::string(processor));
}

Result<HsacoOutput> compile_hip_to_hsaco(const HiprtcApi& api, const HipCompileRequest& request) {
  const std::string name(request.name);
  if (!is_processor_name(request.processor))
    return make_error(ErrorCode::invalid_argument, "'" + request.processor + "' is not an AMDGPU processor (gfx...)");
  if (!request.allowed_processors.empty() &&
      std::find(request.allowed_processors.begin(), request.allowed_processors.end(), request.processor) ==
          request.allowed_processors.end())
    return make_error(ErrorCode::invalid_argument, "HIPRTC does not compile for " + request.processor);

  for (const std::string& option : request.options) {
    if (selects_processor(option))
      return make_error(ErrorCode::invalid_argument, "option '" + option + "' may not choose the processor");
  }

  std::vector<const char*> header_contents, header_names;
  if (request.headers) {
    for (const auto& [include_name, content] : *request.headers) {
      header_names.push_back(include_name.c_str());
      header_contents.push_back(content.c_str());
    }
  }
  // comgr compiles a copy named $TMPDIR/comgr-XXXXXX/input/CompileSource,
  // which would become __FILE__ wherever the source uses it: the worker's
  // private directory in the code object, and other bytes on every compile.
  // A #line directive makes __FILE__ the request's name, as NVRTC does.
  const std::string source = line_directive(name) + std::string(request.source);
  HiprtcProgram raw = nullptr;
  HiprtcResult result = api.create_program(&raw, source.c_str(), name.c_str(), static_cast<int>(header_names.size()),
                                           header_contents.data(), header_names.data());
  if (result != k_hiprtc_success) return hiprtc_failure(api, result, "hiprtcCreateProgram failed");
  auto destroy = [&api](HiprtcProgram* p) { api.destroy_program(p); };
  std::unique_ptr<HiprtcProgram, decltype(destroy)> program(&raw, destroy);

  for (const std::string& expression : request.name_expressions) {
    result = api.add_name_expression(raw, expression.c_str());
    if (result != k_hiprtc_success)
      return hiprtc_failure(api, result, "name expression '" + expression + "' was not accepted");
  }

  const std::string architecture = "--offload-arch=" + request.processor;
  std::vector<const char*> option_pointers;
  for (const std::string& option : request.options) option_pointers.push_back(option.c_str());
  option_pointers.push_back(architecture.c_str());
  result = api.compile_program(raw, static_cast<int>(option_pointers.size()), option_pointers.data());
  std::string log = program_log(api, raw, name);
  if (result != k_hiprtc_success)
    return hiprtc_failure(api, result, "HIPRTC failed to compile " + name + " for " + request.processor,
                          std::move(log));

  HsacoOutput out;
  out.log = std::move(log);
  for (const std::string& expression : request.name_expressions) {
    const char* lowered = nullptr;
    result = api.get_lowered_name(raw, expression.c_str(), &lowered);
    if (result != k_hiprtc_success || !lowered) {
      return hiprtc_failure(api, result == k_hiprtc_success ? k_hiprtc_error_name_expression_not_valid : result,
                            "name expression '" + expression + "' names no kernel in " + name, out.log);
    }
    out.lowered_names[expression] = lowered;
  }

  size_t size = 0;
  if ((result = api.get_code_size(raw, &size)) != k_hiprtc_success)
    return hiprtc_failure(api, result, "hiprtcGetCodeSize failed");
  std::string code(size, '\0');
  if ((result = api.get_code(raw, code.data())) != k_hiprtc_success)
    return hiprtc_failure(api, result, "hiprtcGetCode failed");
  auto object = extract_code_object(code, request.processor);
  if (!object) return object.error();
  out.hsaco = std::move(*object);
  return out;
}

}  // namespace kjit
