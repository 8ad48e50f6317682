#include "backends/nvjitlink/nvjitlink_stage.h"

#include <algorithm>
#include <initializer_list>
#include <memory>

namespace kjit {
namespace {

std::string_view trimmed(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

// The first line of `log` containing any of `needles`; empty when none does.
std::string_view first_line_with(std::string_view log, std::initializer_list<std::string_view> needles) {
  while (!log.empty()) {
    size_t end = log.find('\n');
    std::string_view line = log.substr(0, end);
    for (std::string_view needle : needles)
      if (line.find(needle) != std::string_view::npos) return trimmed(line);
    if (end == std::string_view::npos) break;
    log.remove_prefix(end + 1);
  }
  return {};
}

}  // namespace

std::vector<std::string> undefined_references(std::string_view log) {
  std::vector<std::string> names;
  for (std::string_view marker : {"Undefined reference to '", "Unresolved extern function '"}) {
    for (size_t at = log.find(marker); at != std::string_view::npos; at = log.find(marker, at + 1)) {
      size_t begin = at + marker.size();
      size_t end = log.find('\'', begin);
      if (end == std::string_view::npos) break;
      std::string name(log.substr(begin, end - begin));
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
    }
  }
  return names;
}

Error classify_link_failure(bool code_is_input_error, std::string_view ptx_name, std::string_view what_failed,
                            std::string log) {
  const std::string name(ptx_name);
  if (std::vector<std::string> undefined = undefined_references(log); !undefined.empty()) {
    std::string list;
    bool libdevice = false;
    for (const std::string& symbol : undefined) {
      list += (list.empty() ? "" : ", ") + symbol;
      libdevice |= symbol.starts_with("__nv_");
    }
    std::string message = name + " calls functions it does not define: " + list +
                          ". kjit links one module into a cubin: define them in it, or ask for the PTX "
                          "(kjit compile --ptx) to link with the code that defines them";
    if (libdevice) message += "; __nv_* functions are libdevice's, and libdevice defines none by these names";
    return make_error(ErrorCode::invalid_argument, std::move(message), std::move(log));
  }
  if (std::string_view line = first_line_with(log, {"uses too much", "too much parameter space", "uses too many"});
      !line.empty()) {
    return make_error(ErrorCode::invalid_argument, name + " exceeds a limit of the target: " + std::string(line),
                      std::move(log));
  }
  if (std::string_view line = first_line_with(log, {"Unsupported .version", "Unsupported .target"}); !line.empty()) {
    return make_error(ErrorCode::failed_precondition,
                      name + " needs a newer CUDA toolkit than the one serving it: " + std::string(line),
                      std::move(log));
  }
  if (std::string_view line = first_line_with(log, {"error   :", "fatal   :", "error:"}); !line.empty()) {
    return make_error(ErrorCode::invalid_argument, std::string(what_failed) + " " + name + ": " + std::string(line),
                      std::move(log));
  }
  return make_error(code_is_input_error ? ErrorCode::invalid_argument : ErrorCode::internal,
                    std::string(what_failed) + " " + name, std::move(log));
}

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
    return classify_link_failure(is_input_error(result), name,
                                 "nvJitLink failed (code " + std::to_string(result) + ") to assemble", std::move(log));
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
