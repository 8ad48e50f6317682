#include "backends/nvjitlink/nvjitlink_stage.h"

#include <memory>

namespace kjit {

#if KJIT_HAVE_CUDA_HEADERS

namespace {

std::string error_log(const NvJitLinkApi& api, nvJitLinkHandle handle) {
  size_t size = 0;
  if (api.get_error_log_size(handle, &size) != NVJITLINK_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (api.get_error_log(handle, log.data()) != NVJITLINK_SUCCESS) return {};
  log.resize(size - 1);
  return log;
}

std::string info_log(const NvJitLinkApi& api, nvJitLinkHandle handle) {
  size_t size = 0;
  if (api.get_info_log_size(handle, &size) != NVJITLINK_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (api.get_info_log(handle, log.data()) != NVJITLINK_SUCCESS) return {};
  log.resize(size - 1);
  return log;
}

// Codes caused by the request's content or options; the rest are internal.
bool is_input_error(nvJitLinkResult result) {
  switch (result) {
    case NVJITLINK_ERROR_UNRECOGNIZED_OPTION:
    case NVJITLINK_ERROR_MISSING_ARCH:
    case NVJITLINK_ERROR_INVALID_INPUT:
    case NVJITLINK_ERROR_PTX_COMPILE:
    case NVJITLINK_ERROR_NVVM_COMPILE:
    case NVJITLINK_ERROR_UNRECOGNIZED_INPUT:
    case NVJITLINK_ERROR_FINALIZE:
    case NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS:
    case NVJITLINK_ERROR_INCORRECT_INPUT_TYPE:
    case NVJITLINK_ERROR_ARCH_MISMATCH:
    case NVJITLINK_ERROR_UNRECOGNIZED_ARCH:
    case NVJITLINK_ERROR_UNSUPPORTED_ARCH:
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<CubinOutput> link_ptx_to_cubin(const NvJitLinkApi& api, std::string_view ptx, std::string_view ptx_name,
                                      const std::vector<std::string>& options) {
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());

  nvJitLinkHandle raw = nullptr;
  nvJitLinkResult result = api.create(&raw, static_cast<uint32_t>(option_pointers.size()), option_pointers.data());
  if (result != NVJITLINK_SUCCESS) {
    return make_error(is_input_error(result) ? ErrorCode::invalid_argument : ErrorCode::internal,
                      "nvJitLinkCreate failed (code " + std::to_string(result) + ") with options for " +
                          (options.empty() ? std::string("?") : options.front()));
  }
  auto destroy = [&api](nvJitLinkHandle* h) { api.destroy(h); };
  std::unique_ptr<nvJitLinkHandle, decltype(destroy)> handle(&raw, destroy);

  // nvJitLink reads PTX as a NUL-terminated string.
  std::string ptx_text(ptx);
  std::string name(ptx_name);
  result = api.add_data(raw, NVJITLINK_INPUT_PTX, ptx_text.c_str(), ptx_text.size() + 1, name.c_str());
  if (result == NVJITLINK_SUCCESS) result = api.complete(raw);
  if (result != NVJITLINK_SUCCESS) {
    std::string log = error_log(api, raw);
    std::string info = info_log(api, raw);
    if (!info.empty()) log = info + (log.empty() ? "" : "\n" + log);
    return make_error(is_input_error(result) ? ErrorCode::invalid_argument : ErrorCode::internal,
                      "nvJitLink failed to assemble " + name + " (code " + std::to_string(result) + ")", std::move(log));
  }

  CubinOutput out;
  out.log = info_log(api, raw);
  size_t size = 0;
  if ((result = api.get_linked_cubin_size(raw, &size)) != NVJITLINK_SUCCESS)
    return make_error(ErrorCode::internal, "nvJitLinkGetLinkedCubinSize failed (code " + std::to_string(result) + ")");
  out.cubin.assign(size, '\0');
  if ((result = api.get_linked_cubin(raw, out.cubin.data())) != NVJITLINK_SUCCESS)
    return make_error(ErrorCode::internal, "nvJitLinkGetLinkedCubin failed (code " + std::to_string(result) + ")");
  return out;
}

#else

Result<CubinOutput> link_ptx_to_cubin(const NvJitLinkApi&, std::string_view, std::string_view,
                                      const std::vector<std::string>&) {
  return make_error(ErrorCode::failed_precondition, "nvJitLink is not available: kjit was built without the CUDA toolkit");
}

#endif

}  // namespace kjit
