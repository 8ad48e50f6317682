#include "pipeline/hip_options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "core/input_kinds.h"

namespace kjit {
namespace {

Error refuse(std::string_view option, std::string_view why) {
  return make_error(ErrorCode::invalid_argument, "option '" + std::string(option) + "' is not allowed: " + std::string(why));
}

constexpr std::string_view k_allowed_source =
    "-D<x>, -U<x>, -std=c++11|14|17|20, -O0..-O3, -ffast-math, -ffp-contract=fast|on|off, "
    "-fgpu-flush-denormals-to-zero, -w, -mcode-object-version=4|5, -m[no-]wavefrontsize64";
constexpr std::string_view k_allowed_llvm = "-mcode-object-version=4|5|6, -m[no-]wavefrontsize64";

bool macro_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string HipOptions::llvm_features() const {
  if (!wavefront64) return {};
  return *wavefront64 ? "+wavefrontsize64" : "-wavefrontsize64";
}

Result<HipOptions> check_hip_options(InputKind input, const std::vector<std::string>& options,
                                     const AmdArchInfo& arch) {
  const OptionFamily family = input_kind_info(input).options;
  const bool source = family == OptionFamily::hip_source;
  const bool llvm = family == OptionFamily::llvm;
  if (!source && !llvm && !options.empty())
    return make_error(ErrorCode::invalid_argument, std::string(to_string(input)) +
                                                       " input does not build for hip: targets; send HIP source or LLVM IR");
  HipOptions checked;
  for (const std::string& option : options) {
    std::string_view opt = option;
    std::string normalized = option;
    if (opt.starts_with("-mcode-object-version=")) {
      std::string_view value = opt.substr(22);
      std::array<std::string_view, 3> versions{"4", "5", "6"};
      size_t allowed = source ? 2 : 3;  // HIPRTC's comgr predates v6
      if (std::find(versions.begin(), versions.begin() + allowed, value) == versions.begin() + allowed)
        return refuse(option, source ? "the code object version must be 4 or 5" : "the code object version must be 4, 5 or 6");
      checked.code_object_version = static_cast<uint32_t>(value[0] - '0');
    } else if (opt == "-mwavefrontsize64" || opt == "-mno-wavefrontsize64") {
      bool wave64 = opt == "-mwavefrontsize64";
      if (!arch.wavefront_64_selectable && !wave64)
        return refuse(option, std::string(arch.processor) + " runs wavefronts of 64 only");
      // On GCN and CDNA wave64 is the only size: asking for it changes nothing.
      if (arch.wavefront_64_selectable) checked.wavefront64 = wave64;
    } else if (!source) {
      return refuse(option, "for LLVM IR on hip: targets the options are " + std::string(k_allowed_llvm) +
                                "; the optimisation pipeline is the pass argument llvm-passes.pipeline");
    } else if (opt.starts_with("-D") || opt.starts_with("-U")) {
      if (opt.size() < 3 || !macro_name_start(opt[2])) return refuse(option, "a macro name must start with a letter or '_'");
    } else if (opt.starts_with("-std=")) {
      std::array<std::string_view, 4> stds{"c++11", "c++14", "c++17", "c++20"};
      if (std::find(stds.begin(), stds.end(), opt.substr(5)) == stds.end())
        return refuse(option, "the language standard must be one of c++11, c++14, c++17, c++20");
    } else if (opt.starts_with("-O")) {
      if (opt.size() != 3 || opt[2] < '0' || opt[2] > '3') return refuse(option, "the level must be -O0 to -O3");
    } else if (opt.starts_with("-ffp-contract=")) {
      std::string_view value = opt.substr(14);
      if (value != "fast" && value != "on" && value != "off") return refuse(option, "the value must be fast, on or off");
    } else if (opt != "-ffast-math" && opt != "-fgpu-flush-denormals-to-zero" && opt != "-w") {
      return refuse(option, "it is not in the allowlist for HIP source; allowed: " + std::string(k_allowed_source) +
                                " (headers travel in the request, the target in its target field)");
    }
    checked.normalized.push_back(normalized);
    if (source) checked.hiprtc.push_back(std::move(normalized));
  }
  return checked;
}

}  // namespace kjit
