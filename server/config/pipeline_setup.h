// The compile pipeline a daemon configuration describes: the toolkits (the
// default and per target range), plugins and named pipelines. Built the same
// way by the daemon and by each of its compile worker processes.
#pragma once

#include <memory>

#include "backends/tileiras/tileiras.h"
#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

Result<std::shared_ptr<const CompilePipeline>> make_compile_pipeline(const DaemonConfig& config);

// Where the configuration says tileiras is looked for (the tileiras key,
// toolkit_paths, the project's prefix beside local_toolkit_prefix's).
TileirasSearch tileiras_search_of(const DaemonConfig& config);

}  // namespace kjit
