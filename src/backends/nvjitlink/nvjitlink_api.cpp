#include "backends/nvjitlink/nvjitlink_api.h"

#include "backends/dynamic_library.h"

namespace kjit {

#if KJIT_HAVE_CUDA_HEADERS

Result<std::shared_ptr<const NvJitLinkApi>> load_nvjitlink(const std::string& cuda_home, bool search_loader_path) {
  auto library =
      DynamicLibrary::open_first(toolkit_library_candidates(cuda_home, "libnvJitLink", search_loader_path));
  if (!library) return make_error(ErrorCode::failed_precondition, "nvJitLink is not available: " + library.error().message);

  auto api = std::make_shared<NvJitLinkApi>();
  api->library_path = library->path();
  bool bound = library->bind("nvJitLinkVersion", api->version) && library->bind("nvJitLinkCreate", api->create) &&
               library->bind("nvJitLinkDestroy", api->destroy) && library->bind("nvJitLinkAddData", api->add_data) &&
               library->bind("nvJitLinkComplete", api->complete) &&
               library->bind("nvJitLinkGetLinkedCubinSize", api->get_linked_cubin_size) &&
               library->bind("nvJitLinkGetLinkedCubin", api->get_linked_cubin) &&
               library->bind("nvJitLinkGetErrorLogSize", api->get_error_log_size) &&
               library->bind("nvJitLinkGetErrorLog", api->get_error_log) &&
               library->bind("nvJitLinkGetInfoLogSize", api->get_info_log_size) &&
               library->bind("nvJitLinkGetInfoLog", api->get_info_log);
  if (!bound) {
    return make_error(ErrorCode::failed_precondition,
                      api->library_path + " lacks an nvJitLink entry point kjit needs (nvJitLink 12.3 or newer is required)");
  }
  api->version(&api->major, &api->minor);
  return std::shared_ptr<const NvJitLinkApi>(std::move(api));
}

#else

Result<std::shared_ptr<const NvJitLinkApi>> load_nvjitlink(const std::string&, bool) {
  return make_error(ErrorCode::failed_precondition,
                    "nvJitLink is not available: kjit was built without the CUDA toolkit headers (nvJitLink.h)");
}

#endif

}  // namespace kjit
