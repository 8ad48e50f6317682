// The compile pipeline a daemon configuration describes: the toolkits (the
// default and per target range), plugins and named pipelines. Built the same
// way by the daemon and by each of its compile worker processes.
#pragma once

#include <memory>

#include "backends/tileiras/tileiras.h"
#include "backends/toolkit_discovery.h"
#include "backends/triton/triton_build.h"
#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

// `discovered`: the toolkits beyond the system one that the daemon found,
// loaded as they are instead of searching (a compile worker's); null: search.
Result<std::shared_ptr<const CompilePipeline>> make_compile_pipeline(const DaemonConfig& config,
                                                                      const std::vector<ToolkitHome>* discovered = nullptr);

// What a pipeline's toolkits hold of discovery (wheels, the project's
// prefix), in order, to hand to compile workers.
std::vector<ToolkitHome> discovered_homes(const CompilePipeline& pipeline);

// Where the configuration says tileiras is looked for (the tileiras key,
// toolkit_paths, the project's prefix beside local_toolkit_prefix's).
TileirasSearch tileiras_search_of(const DaemonConfig& config);

// Where the configuration says Triton builds are looked for ([triton]
// builds, then the project's .deps/triton-builds beside its CUDA wheels).
TritonBuildSearch triton_build_search_of(const DaemonConfig& config);

// Where the builds' descriptions are kept across starts: [triton]
// descriptions_dir, else triton-builds/ beside the disk tier's entries;
// empty (nowhere) without a disk tier.
std::string triton_descriptions_dir_of(const DaemonConfig& config);

}  // namespace kjit
