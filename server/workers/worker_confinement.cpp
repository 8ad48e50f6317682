#include "server/workers/worker_confinement.h"

#include <link.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <set>

#include "server/config/pipeline_setup.h"

namespace kjit {
namespace {

// Where the dynamic loader and the C++ runtime find what they need.
constexpr const char* k_system_read_only[] = {
    "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
    "/etc/ld.so.cache",                        // the loader, for libraries opened lazily
    "/etc/localtime", "/usr/share/zoneinfo",  // log timestamps
    "/proc/self",                              // this process only (the loader and sanitizers read its maps)
    "/sys/devices/system/cpu",                 // the number of cores
    "/dev/urandom",
};

// The directory of every shared library loaded now: the toolchains open
// companions lazily from beside themselves (NVRTC's builtins library).
std::set<std::string> loaded_library_dirs() {
  std::set<std::string> dirs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0] == '/')
          static_cast<std::set<std::string>*>(out)->insert(std::filesystem::path(info->dlpi_name).parent_path());
        return 0;
      },
      &dirs);
  return dirs;
}

}  // namespace

SandboxPolicy worker_sandbox_policy(const DaemonConfig& config, const CompilePipeline& pipeline,
                                    const std::string& private_dir, const WorkerClass& worker_class) {
  SandboxPolicy policy;
  std::set<std::string> read_only(std::begin(k_system_read_only), std::end(k_system_read_only));
  // Toolkits: their libraries and the headers every CUDA C++ compile sees.
  for (const RoutedToolkit& routed : pipeline.toolkits().all()) {
    const CudaToolkit& toolkit = *routed.toolkit;
    if (!toolkit.home().empty()) read_only.insert(toolkit.home());
    for (const std::string& dir : toolkit.include_dirs()) read_only.insert(dir);
    if (!toolkit.libdevice_path().empty()) read_only.insert(toolkit.libdevice_path());
  }
  // Plugins: the files themselves, not the directories they sit in.
  for (const std::string& path : config.plugins) read_only.insert(std::filesystem::absolute(path).string());
  for (const std::string& path : config.llvm_pass_plugins) read_only.insert(std::filesystem::absolute(path).string());
  for (const std::string& dir : loaded_library_dirs()) read_only.insert(dir);
  policy.read_only.assign(read_only.begin(), read_only.end());
  policy.read_write = {private_dir, "/dev/null"};
  // tileiras is a program that loads libnvvm from its wheel and runs the ptxas beside it: a Tile IR worker may read
  // the wheel and run those two files (and their loader), nothing else. Any other worker, or one without tileiras,
  // runs nothing. Located, not run: a worker's start runs no program.
  if (worker_class.tileir)
    if (const std::optional<TileirasLocation> tileiras = tileiras_location()) allow_tileiras(policy, *tileiras);
  if (worker_class.triton) {
    for (const TritonBuild& build : triton_builds()) allow_triton_build(policy, build);
    for (const std::string& plugin : config.triton_plugins) policy.read_only.push_back(plugin);
    for (const TritonPluginSetting& setting : config.triton_plugin_settings)
      if (!setting.library.empty()) policy.read_only.push_back(setting.library);
  }
  return policy;
}

void allow_triton_build(SandboxPolicy& policy, const TritonBuild& build) {
  std::error_code ec;
  // The environment's own interpreter link, and the interpreter it names.
  const std::string python = std::filesystem::canonical(build.python, ec).string();
  policy.executables.push_back(ec ? build.python : python);
  for (const std::string& dir : build.read_paths) policy.read_only.push_back(dir);
  for (const std::string& program : build.executables) policy.executables.push_back(program);
}

void allow_tileiras(SandboxPolicy& policy, const TileirasLocation& tileiras) {
  policy.read_only.push_back(tileiras.root);
  policy.executables.push_back(tileiras.path);
  policy.executables.push_back(tileiras.ptxas);
}

Result<std::string> confine_worker(const DaemonConfig& config, const CompilePipeline& pipeline,
                                   const std::string& private_dir, const WorkerClass& worker_class) {
  const SandboxPolicy policy = worker_sandbox_policy(config, pipeline, private_dir, worker_class);
  // tileiras is asked what it is on the first Tile IR job, after this: its
  // search lists directories (the wheel paths, the project's prefix) the
  // confined worker may not read, so it is pinned to the program found now.
  if (worker_class.tileir)
    if (const std::optional<TileirasLocation> tileiras = tileiras_location())
      set_tileiras_search(TileirasSearch{.configured = tileiras->path});
  return confine_this_process(policy);
}

Result<std::string> check_worker_confinement(const DaemonConfig& config) {
  if (config.sandbox == "off") {
    spdlog::warn("sandbox = \"off\": compile workers are not confined; a request's source can make them read "
                 "any file this daemon's user can");
    return std::string("off: compile workers are not confined (sandbox = \"off\")");
  }
  const SandboxSupport support = probe_sandbox_support();
  if (support.landlock_abi < 1 || !support.seccomp)
    return make_error(ErrorCode::failed_precondition,
                      "this kernel cannot confine compile workers (" + support.describe() +
                          "; kjitd needs Landlock and seccomp). Run on a kernel with Landlock enabled, or set "
                          "sandbox = \"off\" (or --sandbox off) to run unconfined");
  std::string text = "landlock: each compile worker confines itself with " + support.describe() +
                     " to the toolkits, system libraries, its plugins and a private temporary directory; "
                     "general workers (every input but Tile IR) run no program: seccomp refuses execve";
  // What the Tile IR workers of this configuration may run: tileiras and its ptxas when Tile IR can be compiled.
  // Located as their sandbox locates them, not run: asking tileiras what it is takes three runs of it, which a
  // daemon's start (and the workers it starts first) should not wait for; the first Tile IR request asks.
  set_tileiras_search(tileiras_search_of(config));
  const std::optional<TileirasLocation> tileiras = tileiras_location();
  if (!tileiras) text += "; no Tile IR workers (no tileiras: Tile IR unavailable)";
  else
    text += "; Tile IR workers, started on demand (at most half the workers, at least one) and running Tile IR "
            "jobs only: for Tile IR they may run exactly " + tileiras->path + " and " + tileiras->ptxas +
            " (read-only " + tileiras->root + "), which run inside the same confinement and bounds, killed with "
            "the worker's process group";
  text += std::string("; Triton workers, ") +
          (config.triton_prestart ? "one started with the daemon (the default build imported), more on demand,"
                                  : "started on demand") +
          " and running Triton IR jobs only: they may run each Triton build's "
          "Python interpreter (kept warm across jobs) and the programs it described (its ptxas), inside the same "
          "confinement and bounds, reading the build's environment";
  return text + "; fleet builds run in background workers of any class, at the lowest CPU priority "
                "(SCHED_IDLE)";
}

}  // namespace kjit
