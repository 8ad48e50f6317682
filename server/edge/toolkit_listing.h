// The daemon's CUDA toolkits as the ListToolkits RPC reports them: what each
// holds and which one builds every architecture kjit knows.
#pragma once

#include "pipeline/toolkit_routing.h"
#include "kjit/v1/compiler.pb.h"

namespace kjit {

void describe_toolkits(const ToolkitRouting& routing, v1::ListToolkitsResponse& response);

}  // namespace kjit
