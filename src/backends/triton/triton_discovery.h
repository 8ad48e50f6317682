// Finding the Triton builds: each candidate interpreter is started with the
// worker script and asked to describe itself. Asking takes a second or more
// of CPU per build (importing Triton, hashing libtriton.so), so the daemon
// asks only when something first needs the builds (a Triton request, the
// toolkit listing), not at every start.
#pragma once

#include <string>
#include <vector>

#include "backends/triton/triton_build.h"

namespace kjit {

// Asks the interpreter; failed_precondition saying why it is no build.
Result<TritonBuild> probe_triton_build(const std::string& python, const std::string& scratch_dir);

struct TritonDiscovery {
  std::vector<TritonBuild> builds;
  std::vector<std::string> failures;  // "python: why", for the log and `kjit toolkits`
};
// Probes every candidate at once; builds of the same name count once (the
// first in search order).
TritonDiscovery discover_triton_builds(const TritonBuildSearch& search, const std::string& scratch_dir);

// Makes the first triton_builds() of the process run discover_triton_builds
// (its callers wait for it), then set_triton_builds.
void discover_triton_builds_on_first_use(TritonBuildSearch search, std::string scratch_dir);
// What the last discovery could not use.
std::vector<std::string> triton_discovery_failures();

}  // namespace kjit
