// The built-in pipelines, one per (input kind, vendor): readable top to
// bottom in default_pipelines.cpp.
#pragma once

#include <vector>

#include "pipeline/pipeline_spec.h"

namespace kjit {

const std::vector<PipelineSpec>& default_pipelines();

// The default pipeline serving `input` for the vendor's targets; nullptr
// when none does.
const PipelineSpec* default_pipeline_for(InputKind input, Vendor vendor = Vendor::nvidia);

}  // namespace kjit
