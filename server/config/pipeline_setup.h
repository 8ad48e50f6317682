// The compile pipeline a daemon configuration describes: the toolkits (the
// default and per target range), plugins and named pipelines. Built the same
// way by the daemon and by each of its compile worker processes.
#pragma once

#include <memory>

#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

Result<std::shared_ptr<const CompilePipeline>> make_compile_pipeline(const DaemonConfig& config);

}  // namespace kjit
