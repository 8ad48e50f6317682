#include "backends/nvrtc/nvrtc_api.h"

#include "backends/dynamic_library.h"

namespace kjit {

#if KJIT_HAVE_CUDA_HEADERS

Result<std::shared_ptr<const NvrtcApi>> load_nvrtc(const std::string& cuda_home, bool search_loader_path) {
  auto library = DynamicLibrary::open_first(toolkit_library_candidates(cuda_home, "libnvrtc", search_loader_path));
  if (!library) return make_error(ErrorCode::failed_precondition, "NVRTC is not available: " + library.error().message);

  auto api = std::make_shared<NvrtcApi>();
  api->library_path = library->path();
  bool bound = library->bind("nvrtcGetErrorString", api->get_error_string) &&
               library->bind("nvrtcVersion", api->version) &&
               library->bind("nvrtcGetNumSupportedArchs", api->get_num_supported_archs) &&
               library->bind("nvrtcGetSupportedArchs", api->get_supported_archs) &&
               library->bind("nvrtcCreateProgram", api->create_program) &&
               library->bind("nvrtcDestroyProgram", api->destroy_program) &&
               library->bind("nvrtcCompileProgram", api->compile_program) &&
               library->bind("nvrtcGetPTXSize", api->get_ptx_size) &&
               library->bind("nvrtcGetPTX", api->get_ptx) &&
               library->bind("nvrtcGetProgramLogSize", api->get_program_log_size) &&
               library->bind("nvrtcGetProgramLog", api->get_program_log) &&
               library->bind("nvrtcAddNameExpression", api->add_name_expression) &&
               library->bind("nvrtcGetLoweredName", api->get_lowered_name);
  if (!bound) {
    return make_error(ErrorCode::failed_precondition,
                      api->library_path + " lacks an NVRTC entry point kjit needs (NVRTC 12 or newer is required)");
  }

  api->version(&api->major, &api->minor);
  if (!library->bind("nvrtcGetPCHHeapSize", api->get_pch_heap_size) ||
      !library->bind("nvrtcSetPCHHeapSize", api->set_pch_heap_size) ||
      !library->bind("nvrtcGetPCHCreateStatus", api->get_pch_create_status)) {
    api->get_pch_heap_size = nullptr;
    api->set_pch_heap_size = nullptr;
    api->get_pch_create_status = nullptr;
  }
  // NVRTC opens its builtins library by name, found through its own RUNPATH
  // next to it; a sanitizer's dlopen interceptor hides that RUNPATH, so the
  // open fails there. Opened first from NVRTC's directory, it is found by
  // name already loaded. Best effort: without it NVRTC reports the failure.
  size_t slash = api->library_path.find_last_of('/');
  if (slash != std::string::npos) {
    const std::string dir = api->library_path.substr(0, slash + 1);
    static_cast<void>(DynamicLibrary::open_first(
        {dir + "libnvrtc-builtins.so." + std::to_string(api->major) + "." + std::to_string(api->minor),
         dir + "libnvrtc-builtins.so"}));
  }
  int count = 0;
  if (api->get_num_supported_archs(&count) == NVRTC_SUCCESS && count > 0) {
    std::vector<int> archs(static_cast<size_t>(count));
    if (api->get_supported_archs(archs.data()) == NVRTC_SUCCESS)
      api->supported_archs.assign(archs.begin(), archs.end());
  }
  return std::shared_ptr<const NvrtcApi>(std::move(api));
}

#else

Result<std::shared_ptr<const NvrtcApi>> load_nvrtc(const std::string&, bool) {
  return make_error(ErrorCode::failed_precondition,
                    "NVRTC is not available: kjit was built without the CUDA toolkit headers (nvrtc.h)");
}

#endif

}  // namespace kjit
