#include "backends/nvfatbin/nvfatbin_api.h"

#include "backends/dynamic_library.h"

namespace kjit {

std::string NvFatbinApi::describe(NvFatbinResult result) const {
  const char* text = get_error_string ? get_error_string(result) : nullptr;
  std::string code = "nvFatbin error " + std::to_string(result);
  return text && *text ? std::string(text) + " (" + code + ")" : code;
}

Result<std::shared_ptr<const NvFatbinApi>> load_nvfatbin(const std::string& cuda_home, bool search_loader_path) {
  auto library =
      DynamicLibrary::open_first(toolkit_library_candidates(cuda_home, "libnvfatbin", search_loader_path));
  if (!library) return make_error(ErrorCode::failed_precondition, "nvFatbin is not available: " + library.error().message);

  auto api = std::make_shared<NvFatbinApi>();
  api->library_path = library->path();
  bool bound = library->bind("nvFatbinGetErrorString", api->get_error_string) &&
               library->bind("nvFatbinVersion", api->version) && library->bind("nvFatbinCreate", api->create) &&
               library->bind("nvFatbinDestroy", api->destroy) && library->bind("nvFatbinAddPTX", api->add_ptx) &&
               library->bind("nvFatbinAddCubin", api->add_cubin) && library->bind("nvFatbinSize", api->size) &&
               library->bind("nvFatbinGet", api->get);
  if (!bound) {
    return make_error(ErrorCode::failed_precondition,
                      api->library_path + " lacks an nvFatbin entry point kjit needs (nvFatbin 12.4 or newer is required)");
  }
  if (api->version(&api->major, &api->minor) != k_nvfatbin_success) api->major = api->minor = 0;
  return std::shared_ptr<const NvFatbinApi>(std::move(api));
}

}  // namespace kjit
