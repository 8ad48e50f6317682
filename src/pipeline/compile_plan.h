// What a compile job will run and the key it is cached under, derived once
// per job: the daemon looks the key up, and on a miss runs this same plan, in
// its own process or in a compile worker it hands the plan to. (How a
// compiled kernel is launched is another plan: src/launch/launch_plan.h.)
#pragma once

#include <map>
#include <string>

#include "pipeline/cache_key.h"
#include "pipeline/pipeline_spec.h"

namespace kjit {

struct CompilePlan {
  PipelineSpec pipeline;                    // the effective pipeline, every edit applied
  std::map<std::string, std::string> args;  // "pass.key" -> value: the request's over the pipeline's
  CacheKey key;
  bool operator==(const CompilePlan&) const = default;
};

}  // namespace kjit
