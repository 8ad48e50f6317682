#include "pipeline/compile_options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string_view>

#include "core/input_kinds.h"

namespace kjit {
namespace {

// source_llvm: CUDA C++ (NVRTC) and LLVM IR (kjit's LLVM stages) both.
enum class Applies { source, link, both, source_llvm };

// One accepted option. `spellings` are the forms clients use; the first is
// canonical. `value` options take "=<v>" (or, for -D/-U, the text glued on).
struct OptionRule {
  std::array<std::string_view, 3> spellings;
  bool takes_value;
  Applies applies;
  std::string_view link_spelling;  // how nvJitLink spells it, when it differs
};

constexpr std::array<OptionRule, 24> k_rules{{
    {{"-D", "--define-macro", ""}, true, Applies::source, ""},
    {{"-U", "--undefine-macro", ""}, true, Applies::source, ""},
    {{"-std", "--std", ""}, true, Applies::source, ""},
    {{"-use_fast_math", "--use_fast_math", ""}, false, Applies::source, ""},
    {{"-ftz", "--ftz", ""}, true, Applies::source_llvm, ""},
    {{"-prec-div", "--prec-div", ""}, true, Applies::source, ""},
    {{"-prec-sqrt", "--prec-sqrt", ""}, true, Applies::source, ""},
    {{"-fmad", "--fmad", ""}, true, Applies::source, ""},
    {{"-restrict", "--restrict", ""}, false, Applies::source, ""},
    {{"-default-device", "--device-as-default-execution-space", ""}, false, Applies::source, ""},
    {{"-extra-device-vectorization", "--extra-device-vectorization", ""}, false, Applies::source, ""},
    {{"-dopt", "--dopt", ""}, true, Applies::source, ""},
    {{"-w", "--disable-warnings", ""}, false, Applies::source, ""},
    {{"-diag-suppress", "--diag-suppress", ""}, true, Applies::source, ""},
    {{"-diag-error", "--diag-error", ""}, true, Applies::source, ""},
    {{"-diag-warn", "--diag-warn", ""}, true, Applies::source, ""},
    {{"-err-no", "--display-error-number", ""}, false, Applies::source, ""},
    {{"-builtin-move-forward", "--builtin-move-forward", ""}, true, Applies::source, ""},
    {{"-builtin-initializer-list", "--builtin-initializer-list", ""}, true, Applies::source, ""},
    {{"-lineinfo", "--generate-line-info", ""}, false, Applies::both, "-lineinfo"},
    {{"-G", "--device-debug", ""}, false, Applies::both, "-g"},
    {{"-maxrregcount", "--maxrregcount", ""}, true, Applies::both, "-maxrregcount"},
    {{"-Xptxas", "--ptxas-options", ""}, true, Applies::link, "-Xptxas"},
    {{"-O", "", ""}, true, Applies::link, "-O"},
}};

// Options that would read or write files on the daemon's host, or that the
// request expresses elsewhere; refused with the reason.
struct RefusedOption {
  std::string_view spelling;
  std::string_view reason;
};
constexpr std::string_view k_reads_files =
    "it would make the daemon read its own files; send headers in the request (the kjit CLI does this for -I)";
constexpr std::string_view k_writes_files = "it would make the daemon write files";
constexpr std::array<RefusedOption, 16> k_refused{{
    {"-I", k_reads_files},
    {"--include-path", k_reads_files},
    {"-include", k_reads_files},
    {"--pre-include", k_reads_files},
    {"-isystem", k_reads_files},
    {"--use-pch", k_reads_files},
    {"--pch-dir", k_writes_files},
    {"--create-pch", k_writes_files},
    {"-pch", k_writes_files},
    {"--pch", k_writes_files},
    {"--time", k_writes_files},
    {"-time", k_writes_files},
    {"--fdevice-time-trace", k_writes_files},
    {"-fdevice-time-trace", k_writes_files},
    {"-arch", "the target is given by the request's target field"},
    {"--gpu-architecture", "the target is given by the request's target field"},
}};

// ptxas options allowed behind -Xptxas: diagnostics and optimization level.
constexpr std::array<std::string_view, 12> k_ptxas_allowed{
    "-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "--warn-on-spills", "-warn-spills",
    "--warn-on-local-memory-usage", "-warn-lmem-usage", "--warn-on-double-precision-use", "-warn-double-usage"};

bool is_unsigned(std::string_view text) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc{} && end == text.data() + text.size();
}

Error refuse(std::string_view option, std::string_view why) {
  return make_error(ErrorCode::invalid_argument, "option '" + std::string(option) + "' is not allowed: " + std::string(why));
}

// Splits "-name=value" / "-Dvalue" against a rule; nullopt when it does not match.
std::optional<std::string> match_value(std::string_view option, std::string_view spelling, bool glued) {
  if (!option.starts_with(spelling)) return std::nullopt;
  std::string_view rest = option.substr(spelling.size());
  if (rest.starts_with("=")) return std::string(rest.substr(1));
  if (glued && !rest.empty()) return std::string(rest);
  return std::nullopt;
}

Status check_value(const OptionRule& rule, std::string_view option, const std::string& value) {
  std::string_view name = rule.spellings[0];
  if (value.empty()) return refuse(option, "it needs a value");
  if (name == "-maxrregcount" && !is_unsigned(value)) return refuse(option, "the value must be a number");
  // A macro name starts the value; anything else ("--define-macro==N") would
  // be read one way here and another way once normalized to -D.
  if ((name == "-D" || name == "-U") &&
      !(std::isalpha(static_cast<unsigned char>(value[0])) || value[0] == '_'))
    return refuse(option, "a macro name must start with a letter or '_'");
  if (name == "-ftz" && value != "true" && value != "false") return refuse(option, "the value must be true or false");
  if (name == "-O" && !(value.size() == 1 && value[0] >= '0' && value[0] <= '3'))
    return refuse(option, "the level must be 0 to 3");
  if (name == "-Xptxas") {
    if (std::find(k_ptxas_allowed.begin(), k_ptxas_allowed.end(), value) == k_ptxas_allowed.end())
      return refuse(option, "ptxas option '" + value + "' is not in the allowlist (-v, -O0..-O3, warnings)");
  }
  if (name == "-std") {
    constexpr std::array<std::string_view, 5> k_stds{"c++03", "c++11", "c++14", "c++17", "c++20"};
    if (std::find(k_stds.begin(), k_stds.end(), value) == k_stds.end())
      return refuse(option, "the language standard must be one of c++03, c++11, c++14, c++17, c++20");
  }
  return Ok{};
}

std::string allowed_list() {
  std::string out;
  for (const OptionRule& rule : k_rules) {
    if (!out.empty()) out += ", ";
    out += rule.spellings[0];
    if (rule.takes_value) out += rule.spellings[0] == "-D" || rule.spellings[0] == "-U" ? "<x>" : "=<v>";
  }
  return out;
}

}  // namespace

Result<CheckedOptions> check_options(InputKind input, const std::vector<std::string>& options) {
  CheckedOptions checked;
  for (const std::string& option : options) {
    for (const RefusedOption& refused : k_refused) {
      std::string_view opt = option;
      if (opt == refused.spelling || (opt.starts_with(refused.spelling) && opt.size() > refused.spelling.size() &&
                                      (opt[refused.spelling.size()] == '=' || refused.spelling == "-I")))
        return refuse(option, refused.reason);
    }

    const OptionRule* matched = nullptr;
    std::string value;
    for (const OptionRule& rule : k_rules) {
      for (std::string_view spelling : rule.spellings) {
        if (spelling.empty()) continue;
        if (!rule.takes_value) {
          if (option == spelling) matched = &rule;
        } else {
          bool glued = spelling == "-D" || spelling == "-U" || spelling == "-O";
          if (auto v = match_value(option, spelling, glued)) {
            matched = &rule;
            value = *v;
          }
        }
        if (matched) break;
      }
      if (matched) break;
    }
    if (!matched) return refuse(option, "it is not in the allowlist; allowed: " + allowed_list());
    if (matched->takes_value) {
      if (Status s = check_value(*matched, option, value); !s) return s.error();
    }
    const OptionFamily family = input_kind_info(input).options;
    const bool llvm_input = family == OptionFamily::llvm;
    // tileiras runs its own ptxas with options it chooses: of the rest only
    // the optimization level and the debug information reach it.
    std::string_view tileiras_spelling;
    if (family == OptionFamily::tileir) {
      const std::string_view name = matched->spellings[0];
      tileiras_spelling = name == "-O" ? "--opt-level=" : name == "-lineinfo" ? "--lineinfo" : name == "-G" ? "--device-debug" : "";
      if (tileiras_spelling.empty())
        return make_error(ErrorCode::invalid_argument, "option '" + option + "' has no effect on " +
                                                           std::string(to_string(input)) +
                                                           " input; tileiras takes -O<0-3>, -lineinfo and -G");
    }
    if (family != OptionFamily::cuda_source &&
        (matched->applies == Applies::source || (matched->applies == Applies::source_llvm && !llvm_input))) {
      return make_error(ErrorCode::invalid_argument,
                        "option '" + option + "' applies to CUDA C++ source" +
                            (matched->applies == Applies::source_llvm ? " and LLVM IR" : "") +
                            " and has no effect on " + std::string(to_string(input)) + " input");
    }

    std::string_view canonical = matched->spellings[0];
    std::string normalized(canonical);
    if (matched->takes_value) normalized += (canonical == "-D" || canonical == "-U" || canonical == "-O" ? "" : "=") + value;
    checked.normalized.push_back(normalized);

    if (family == OptionFamily::tileir) {
      checked.tileiras.push_back(std::string(tileiras_spelling) + (matched->takes_value ? value : ""));
      continue;
    }
    if (matched->applies != Applies::link && family == OptionFamily::cuda_source) checked.nvrtc.push_back(normalized);
    if (matched->applies == Applies::source_llvm && llvm_input) checked.llvm.push_back(normalized);
    if (matched->applies != Applies::source && matched->applies != Applies::source_llvm) {
      std::string link(matched->link_spelling);
      if (matched->takes_value) link += (canonical == "-O" ? "" : "=") + value;
      checked.nvjitlink.push_back(link);
    }
  }
  return checked;
}

}  // namespace kjit
