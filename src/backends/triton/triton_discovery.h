// Finding the Triton builds: each candidate interpreter is started with the
// worker script and asked to describe itself. Asking takes a second or more
// of CPU per build (importing Triton, hashing libtriton.so), so the daemon
// asks only when something first needs the builds (a Triton request, the
// toolkit listing), not at every start.
#pragma once

#include <string>
#include <vector>

#include "backends/triton/triton_build.h"
#include "backends/triton/triton_plugin_settings.h"

namespace kjit {

// Asks the interpreter; failed_precondition saying why it is no build.
Result<TritonBuild> probe_triton_build(const std::string& python, const std::string& scratch_dir);

struct TritonDiscovery {
  std::vector<TritonBuild> builds;
  std::vector<std::string> failures;  // "python: why", for the log and `kjit toolkits`
};
// Probes every candidate at once; builds of the same name count once (the
// first in search order). With a `descriptions_dir`, builds unchanged since
// a discovery there are taken from its record instead, and a discovery in
// which every candidate answered is recorded there
// (triton_descriptions.h).
TritonDiscovery discover_triton_builds(const TritonBuildSearch& search, const std::string& scratch_dir,
                                       const std::string& descriptions_dir = {});

// A build whose bundled ptxas-blackwell is older than another build's and
// lacks CUDA architectures the other builds (Triton 3.8's 13.3 and sm_107a)
// borrows the newer one for those its Triton compiles with it (a probe
// compile each, in its interpreter with TRITON_PTXAS_BLACKWELL_PATH set):
// they join its cuda_archs and its description. discover_triton_builds
// calls it.
void lend_newer_ptxas(std::vector<TritonBuild>& builds, const std::string& scratch_dir);

// Whether the build loads its configured plugins, as its interpreters will:
// one started with their variables (and, for a TRITON_PLUGIN_PATHS build,
// their libraries) must come up and load each library (an extend_with
// build's in a child, so that a library built for another release kills
// only that). failed_precondition naming the plugins and the build, with
// the interpreter's words.
Status check_triton_plugins_load(const TritonBuild& build, const std::string& scratch_dir);

// Discovery, then the configuration's [[triton.plugin]] settings given to
// the builds they name and each such build's loading checked: what a daemon
// with such settings does at start (and --check-config), refusing to serve
// when one fails.
Result<TritonDiscovery> discover_configured_triton_builds(const TritonBuildSearch& search,
                                                          const std::vector<TritonPluginSetting>& settings,
                                                          const std::string& scratch_dir,
                                                          const std::string& descriptions_dir = {});

// Makes the first triton_builds() of the process run discover_triton_builds
// (its callers wait for it), then set_triton_builds.
void discover_triton_builds_on_first_use(TritonBuildSearch search, std::string scratch_dir,
                                         std::string descriptions_dir = {});
// What the last discovery could not use.
std::vector<std::string> triton_discovery_failures();

}  // namespace kjit
