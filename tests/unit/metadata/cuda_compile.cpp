// NVRTC + nvJitLink driven directly (linked, not dlopened): this is test
// support, built only where the toolkit is present.
#include "cuda_compile.h"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "support/toolkit_log.h"

// nvJitLink 13.0 leaks a few KiB per link inside nvJitLinkAddData (seen with
// LeakSanitizer; every handle here is destroyed). Not ours to fix: tell LSan.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libnvJitLink.so\nleak:libnvrtc.so\n";
}

namespace kjit::testing {
namespace {

// "sm_90a" -> "compute_90a": NVRTC emits PTX for the virtual architecture
// and nvJitLink assembles it for the real one.
std::string virtual_arch_of(std::string_view arch) {
  std::string text(arch);
  if (text.rfind("sm_", 0) == 0) text.replace(0, 3, "compute_");
  return text;
}

std::string nvrtc_log(nvrtcProgram program) {
  return test::toolkit_log(program, NVRTC_SUCCESS, nvrtcGetProgramLogSize, nvrtcGetProgramLog);
}

std::string link_info_log(nvJitLinkHandle handle) {
  return test::toolkit_log(handle, NVJITLINK_SUCCESS, nvJitLinkGetInfoLogSize, nvJitLinkGetInfoLog);
}

std::string link_error_log(nvJitLinkHandle handle) {
  return test::toolkit_log(handle, NVJITLINK_SUCCESS, nvJitLinkGetErrorLogSize, nvJitLinkGetErrorLog);
}

// Fills out.cubin, out.link_log and out.ptxas from one PTX input.
void link_into(std::string_view ptx, std::string_view arch, const std::vector<std::string>& link_options,
               CompiledCubin& out) {
  std::vector<std::string> options = {"-arch=" + std::string(arch), "-Xptxas=-v"};
  options.insert(options.end(), link_options.begin(), link_options.end());
  std::vector<const char*> argv;
  for (const auto& option : options) argv.push_back(option.c_str());

  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkCreate(&handle, static_cast<uint32_t>(argv.size()), argv.data()) != NVJITLINK_SUCCESS) {
    out.error = "nvJitLinkCreate failed for " + std::string(arch);
    return;
  }
  auto result = nvJitLinkAddData(handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "input.ptx");
  if (result == NVJITLINK_SUCCESS) result = nvJitLinkComplete(handle);
  out.link_log = link_info_log(handle);
  if (result != NVJITLINK_SUCCESS) {
    out.error = "nvJitLink failed (" + std::to_string(result) + "): " + link_error_log(handle) + out.link_log;
    nvJitLinkDestroy(&handle);
    return;
  }
  size_t size = 0;
  nvJitLinkGetLinkedCubinSize(handle, &size);
  out.cubin.resize(size);
  nvJitLinkGetLinkedCubin(handle, out.cubin.data());
  nvJitLinkDestroy(&handle);
  out.ptxas = parse_ptxas_report(out.link_log);
  out.ok = true;
}

// The decimal number right before / after `marker` in `line`, if any.
std::optional<uint32_t> number_before(std::string_view line, std::string_view marker) {
  size_t end = line.find(marker);
  if (end == std::string_view::npos) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end) return std::nullopt;
  return static_cast<uint32_t>(std::stoul(std::string(line.substr(begin, end - begin))));
}

std::optional<uint32_t> number_after(std::string_view line, std::string_view marker) {
  size_t begin = line.find(marker);
  if (begin == std::string_view::npos) return std::nullopt;
  begin += marker.size();
  size_t end = begin;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  if (begin == end) return std::nullopt;
  return static_cast<uint32_t>(std::stoul(std::string(line.substr(begin, end - begin))));
}

}  // namespace

CompiledCubin compile_cuda(std::string_view source, std::string_view arch, const CudaCompileOptions& options) {
  CompiledCubin out;
  nvrtcProgram program = nullptr;
  std::string text(source);
  if (nvrtcCreateProgram(&program, text.c_str(), "kernel.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    out.error = "nvrtcCreateProgram failed";
    return out;
  }
  for (const auto& expression : options.name_expressions) nvrtcAddNameExpression(program, expression.c_str());

  std::vector<std::string> nvrtc_options = {"-arch=" + virtual_arch_of(arch), "-std=c++17"};
  nvrtc_options.insert(nvrtc_options.end(), options.nvrtc_options.begin(), options.nvrtc_options.end());
  std::vector<const char*> argv;
  for (const auto& option : nvrtc_options) argv.push_back(option.c_str());

  if (nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data()) != NVRTC_SUCCESS) {
    out.error = "NVRTC failed: " + nvrtc_log(program);
    nvrtcDestroyProgram(&program);
    return out;
  }
  for (const auto& expression : options.name_expressions) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(program, expression.c_str(), &lowered) == NVRTC_SUCCESS && lowered)
      out.lowered_names[expression] = lowered;
  }
  size_t ptx_size = 0;
  nvrtcGetPTXSize(program, &ptx_size);
  std::string ptx(ptx_size, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();

  link_into(ptx, arch, options.link_options, out);
  return out;
}

CompiledCubin link_ptx(std::string_view ptx, std::string_view arch, const std::vector<std::string>& link_options) {
  CompiledCubin out;
  link_into(ptx, arch, link_options, out);
  return out;
}

std::map<std::string, PtxasReport> parse_ptxas_report(std::string_view log) {
  // ptxas prints, per entry:
  //   Compiling entry function '<symbol>' for 'sm_90'
  //   Function properties for <symbol>
  //       N bytes stack frame, N bytes spill stores, N bytes spill loads
  //   Used N registers, used N barriers, N bytes smem, ...
  static constexpr std::string_view k_entry = "Compiling entry function '";
  std::map<std::string, PtxasReport> reports;
  PtxasReport* current = nullptr;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = std::min(log.find('\n', start), log.size());
    std::string_view line = log.substr(start, end - start);
    start = end + 1;

    if (size_t at = line.find(k_entry); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + k_entry.size());
      current = &reports[std::string(rest.substr(0, rest.find('\'')))];
      continue;
    }
    if (!current) continue;
    if (auto value = number_before(line, " bytes stack frame")) current->stack_bytes = *value;
    if (auto value = number_after(line, "Used ")) current->registers = *value;
    if (auto value = number_before(line, " bytes smem")) current->shared_bytes = *value;
  }
  return reports;
}

}  // namespace kjit::testing
