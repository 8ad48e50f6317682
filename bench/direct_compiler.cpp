#include "direct_compiler.h"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "sample_stats.h"
#include "support/toolkit_log.h"

namespace kjit::bench {
namespace {

std::string nvrtc_log(nvrtcProgram program) {
  return test::toolkit_log(program, NVRTC_SUCCESS, nvrtcGetProgramLogSize, nvrtcGetProgramLog);
}

std::string nvjitlink_error_log(nvJitLinkHandle handle) {
  return test::toolkit_log(handle, NVJITLINK_SUCCESS, nvJitLinkGetErrorLogSize, nvJitLinkGetErrorLog);
}

Error nvrtc_error(const std::string& what, nvrtcResult result, std::string log = {}) {
  return make_error(ErrorCode::internal, what + ": " + nvrtcGetErrorString(result), std::move(log));
}

Error nvjitlink_error(const std::string& what, nvJitLinkResult result, std::string log = {}) {
  return make_error(ErrorCode::internal, what + ": nvJitLink code " + std::to_string(result), std::move(log));
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  for (const std::string& s : strings) out.push_back(s.c_str());
  return out;
}

Result<std::string> cuda_to_ptx(const BenchKernel& kernel, const std::vector<std::string>& options,
                                std::map<std::string, std::string>& lowered_names) {
  std::string input_name = kernel.name + ".cu";
  nvrtcProgram raw = nullptr;
  nvrtcResult result = nvrtcCreateProgram(&raw, kernel.source.c_str(), input_name.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) return nvrtc_error("nvrtcCreateProgram", result);
  auto destroy = [](nvrtcProgram* p) { nvrtcDestroyProgram(p); };
  std::unique_ptr<nvrtcProgram, decltype(destroy)> program(&raw, destroy);

  for (const std::string& expression : kernel.name_expressions)
    if ((result = nvrtcAddNameExpression(raw, expression.c_str())) != NVRTC_SUCCESS)
      return nvrtc_error("nvrtcAddNameExpression " + expression, result);

  std::vector<const char*> option_pointers = c_strings(options);
  result = nvrtcCompileProgram(raw, static_cast<int>(option_pointers.size()), option_pointers.data());
  // Read the log either way, as kjitd does, so both sides do the same work.
  std::string log = nvrtc_log(raw);
  if (result != NVRTC_SUCCESS) return nvrtc_error("NVRTC failed to compile " + input_name, result, std::move(log));

  for (const std::string& expression : kernel.name_expressions) {
    const char* lowered = nullptr;
    if ((result = nvrtcGetLoweredName(raw, expression.c_str(), &lowered)) != NVRTC_SUCCESS || !lowered)
      return nvrtc_error("nvrtcGetLoweredName " + expression, result);
    lowered_names[expression] = lowered;
  }
  size_t size = 0;
  if ((result = nvrtcGetPTXSize(raw, &size)) != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetPTXSize", result);
  std::string ptx(size, '\0');
  if ((result = nvrtcGetPTX(raw, ptx.data())) != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetPTX", result);
  return ptx;  // NUL-terminated: nvJitLink reads PTX as a C string
}

Result<std::string> ptx_to_cubin(const std::string& ptx, const std::string& input_name,
                                 const std::vector<std::string>& options) {
  std::vector<const char*> option_pointers = c_strings(options);
  nvJitLinkHandle raw = nullptr;
  nvJitLinkResult result = nvJitLinkCreate(&raw, static_cast<uint32_t>(option_pointers.size()), option_pointers.data());
  if (result != NVJITLINK_SUCCESS) return nvjitlink_error("nvJitLinkCreate", result);
  auto destroy = [](nvJitLinkHandle* h) { nvJitLinkDestroy(h); };
  std::unique_ptr<nvJitLinkHandle, decltype(destroy)> handle(&raw, destroy);

  result = nvJitLinkAddData(raw, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), input_name.c_str());
  if (result == NVJITLINK_SUCCESS) result = nvJitLinkComplete(raw);
  if (result != NVJITLINK_SUCCESS)
    return nvjitlink_error("nvJitLink failed to assemble " + input_name, result, nvjitlink_error_log(raw));
  size_t size = 0;
  if ((result = nvJitLinkGetLinkedCubinSize(raw, &size)) != NVJITLINK_SUCCESS)
    return nvjitlink_error("nvJitLinkGetLinkedCubinSize", result);
  std::string cubin(size, '\0');
  if ((result = nvJitLinkGetLinkedCubin(raw, cubin.data())) != NVJITLINK_SUCCESS)
    return nvjitlink_error("nvJitLinkGetLinkedCubin", result);
  return cubin;
}

}  // namespace

DirectCompiler::DirectCompiler(const std::string& cuda_home, unsigned sm) {
  nvrtc_options_.push_back("-arch=compute_" + std::to_string(sm));
  // CUDA 13 keeps cuda/std, cub and thrust under include/cccl; kjitd adds it
  // when present, so the baseline does too.
  for (const char* sub : {"/include", "/include/cccl"}) {
    std::error_code ec;
    if (std::filesystem::is_directory(cuda_home + sub, ec))
      nvrtc_options_.push_back("--include-path=" + cuda_home + sub);
  }
  link_options_.push_back("-arch=sm_" + std::to_string(sm));
}

Result<DirectCompileOutput> DirectCompiler::compile(const BenchKernel& kernel) const {
  DirectCompileOutput out;
  auto start = std::chrono::steady_clock::now();
  Result<std::string> ptx = cuda_to_ptx(kernel, nvrtc_options_, out.lowered_names);
  out.nvrtc_ms = ms_since(start);
  if (!ptx) return ptx.error();

  start = std::chrono::steady_clock::now();
  Result<std::string> cubin = ptx_to_cubin(*ptx, kernel.name + ".cu", link_options_);
  out.nvjitlink_ms = ms_since(start);
  if (!cubin) return cubin.error();
  out.cubin = std::move(cubin.value());
  return out;
}

std::string DirectCompiler::nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "?";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string DirectCompiler::nvjitlink_version() {
  unsigned major = 0, minor = 0;
  if (nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) return "?";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kjit::bench
