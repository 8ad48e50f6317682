// The JSON that `kjit compile --json` prints. Field names are a contract:
// fields are added, never renamed.
#pragma once

#include <nlohmann/json.hpp>

#include "kjit/client.h"

namespace kjit::cli {

nlohmann::json kernel_to_json(const KernelInfo& kernel);
nlohmann::json compile_result_to_json(const CompileResult& result);

}  // namespace kjit::cli
