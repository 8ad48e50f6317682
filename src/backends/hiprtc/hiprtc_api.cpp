#include "backends/hiprtc/hiprtc_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "backends/dynamic_library.h"

namespace kjit {

namespace {

// "libamdhip64.so.5.2.21153" -> "5.2.21153"; empty unless all of what
// follows ".so." is digits and dots.
std::string version_from_file_name(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const size_t so = name.find(".so.");
  if (so == std::string::npos) return {};
  std::string version = name.substr(so + 4);
  if (version.empty() || version.find_first_not_of("0123456789.") != std::string::npos) return {};
  return version;
}

HiprtcLocation locate(const std::string& path) {
  std::error_code error;
  std::filesystem::path resolved = std::filesystem::canonical(path, error);
  HiprtcLocation location;
  location.path = error ? path : resolved.string();
  location.version = version_from_file_name(location.path);
  return location;
}

}  // namespace

std::optional<HiprtcLocation> find_hiprtc(const std::vector<std::string>& library_dirs) {
  for (const std::string& dir : library_dirs) {
    for (const char* name : {"libamdhip64.so.5", "libamdhip64.so", "libhiprtc.so"}) {
      const std::string candidate = dir + "/" + name;
      std::error_code error;
      if (std::filesystem::is_regular_file(candidate, error)) return locate(candidate);
    }
  }
  return std::nullopt;
}

std::optional<HiprtcLocation> find_hiprtc() {
  const char* configured = std::getenv("KJIT_HIPRTC_LIBRARY");
  if (configured && *configured) return locate(configured);
  return find_hiprtc({"/usr/lib/x86_64-linux-gnu", "/opt/rocm/lib", "/usr/lib64", "/usr/local/lib"});
}

Result<std::shared_ptr<const HiprtcApi>> load_hiprtc(const HiprtcLocation& location) {
  auto library = DynamicLibrary::open_first({location.path});
  if (!library)
    return make_error(ErrorCode::failed_precondition, "HIPRTC is not available: " + library.error().message);

  auto api = std::make_shared<HiprtcApi>();
  api->location = location;
  const auto bind = [&library](const char* name, auto& fn) -> Status {
    if (library->bind(name, fn)) return Ok{};
    const char* why = dlerror();
    return make_error(ErrorCode::failed_precondition,
                      library->path() + " lacks HIPRTC's " + name + ": " + (why ? why : "symbol not found"));
  };
  for (const Status& bound :
       {bind("hiprtcGetErrorString", api->get_error_string), bind("hiprtcVersion", api->version),
        bind("hiprtcCreateProgram", api->create_program), bind("hiprtcDestroyProgram", api->destroy_program),
        bind("hiprtcCompileProgram", api->compile_program), bind("hiprtcGetCodeSize", api->get_code_size),
        bind("hiprtcGetCode", api->get_code), bind("hiprtcGetProgramLogSize", api->get_program_log_size),
        bind("hiprtcGetProgramLog", api->get_program_log), bind("hiprtcAddNameExpression", api->add_name_expression),
        bind("hiprtcGetLoweredName", api->get_lowered_name)}) {
    if (!bound) return bound.error();
  }

  // HIPRTC dlopen's comgr, which does the compiling, only at its first
  // compile, and crashes (a null call) when that fails, as it does once a
  // worker is sandboxed. Loaded now, from HIPRTC's directory first, it is
  // found by name already loaded; without it HIPRTC cannot compile at all.
  const size_t slash = library->path().find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string() : library->path().substr(0, slash + 1);
  auto comgr = DynamicLibrary::open_first({dir + "libamd_comgr.so.2", "libamd_comgr.so.2"});
  if (!comgr) {
    return make_error(ErrorCode::failed_precondition,
                      "HIPRTC at " + library->path() + " cannot compile without comgr: " + comgr.error().message);
  }

  if (api->version(&api->major, &api->minor) != k_hiprtc_success) api->major = api->minor = 0;
  if (api->location.version.empty())
    api->location.version = std::to_string(api->major) + "." + std::to_string(api->minor);
  return std::shared_ptr<const HiprtcApi>(std::move(api));
}

}  // namespace kjit
