#include "backends/nvrtc/nvrtc_stage.h"

#include <memory>

namespace kjit {

#if KJIT_HAVE_CUDA_HEADERS

namespace {

std::string program_log(const NvrtcApi& api, nvrtcProgram program) {
  size_t size = 0;
  if (api.get_program_log_size(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (api.get_program_log(program, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

Error nvrtc_failure(const NvrtcApi& api, nvrtcResult result, std::string what, std::string log = {}) {
  const ErrorCode code = result == NVRTC_ERROR_COMPILATION || result == NVRTC_ERROR_INVALID_OPTION ||
                                 result == NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID
                             ? ErrorCode::invalid_argument
                         : result == NVRTC_ERROR_OUT_OF_MEMORY ? ErrorCode::resource_exhausted
                                                               : ErrorCode::internal;
  return make_error(code,
                    std::move(what) + " (" + api.get_error_string(result) + ")", std::move(log));
}

}  // namespace

Result<PtxOutput> compile_cuda_to_ptx(const NvrtcApi& api, const CompileJob& job, const std::vector<std::string>& options) {
  std::vector<const char*> header_contents, header_names;
  for (const auto& [name, content] : job.headers) {
    header_names.push_back(name.c_str());
    header_contents.push_back(content.c_str());
  }
  nvrtcProgram raw = nullptr;
  nvrtcResult result = api.create_program(&raw, job.input.c_str(), job.input_name.c_str(),
                                          static_cast<int>(header_names.size()), header_contents.data(),
                                          header_names.data());
  if (result != NVRTC_SUCCESS) return nvrtc_failure(api, result, "nvrtcCreateProgram failed");
  auto destroy = [&api](nvrtcProgram* p) { api.destroy_program(p); };
  std::unique_ptr<nvrtcProgram, decltype(destroy)> program(&raw, destroy);

  for (const std::string& expression : job.name_expressions) {
    result = api.add_name_expression(raw, expression.c_str());
    if (result != NVRTC_SUCCESS)
      return nvrtc_failure(api, result, "name expression '" + expression + "' was not accepted");
  }

  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());
  result = api.compile_program(raw, static_cast<int>(option_pointers.size()), option_pointers.data());
  std::string log = program_log(api, raw);
  if (result != NVRTC_SUCCESS) {
    return nvrtc_failure(api, result, "NVRTC failed to compile " + job.input_name + " for " + job.target.canonical(),
                         std::move(log));
  }

  PtxOutput out;
  out.log = std::move(log);
  for (const std::string& expression : job.name_expressions) {
    const char* lowered = nullptr;
    result = api.get_lowered_name(raw, expression.c_str(), &lowered);
    if (result != NVRTC_SUCCESS || !lowered) {
      return nvrtc_failure(api, result, "name expression '" + expression + "' names no kernel in " + job.input_name,
                           out.log);
    }
    out.lowered_names[expression] = lowered;
  }

  size_t size = 0;
  if ((result = api.get_ptx_size(raw, &size)) != NVRTC_SUCCESS) return nvrtc_failure(api, result, "nvrtcGetPTXSize failed");
  out.ptx.assign(size, '\0');
  if ((result = api.get_ptx(raw, out.ptx.data())) != NVRTC_SUCCESS) return nvrtc_failure(api, result, "nvrtcGetPTX failed");
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  return out;
}

#else

Result<PtxOutput> compile_cuda_to_ptx(const NvrtcApi&, const CompileJob&, const std::vector<std::string>&) {
  return make_error(ErrorCode::failed_precondition, "NVRTC is not available: kjit was built without the CUDA toolkit");
}

#endif

}  // namespace kjit
