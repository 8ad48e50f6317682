// A request's own edit to its Triton build's stages (CompileRequest.
// triton_edits), checked as far as it can be without the build: the worker,
// which knows the build's stages, says whether its anchor runs.
#pragma once

#include <cstddef>

#include "kjit/status.h"
#include "kjit/types.h"
#include "pipeline/pipeline_spec.h"

namespace kjit {

// The request's edit triton_edits[index] as a pipeline edit whose origin
// names it ("request triton_edits[2]"), after checking its shape: a known op
// other than override-pipeline, the fields that op takes and no others,
// well-formed pass and stage names. Anything wrong is invalid_argument.
Result<PipelineEdit> requested_triton_edit(const TritonEdit& edit, size_t index);

}  // namespace kjit
