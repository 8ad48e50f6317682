#include "launch/triton_launch.h"

#include <nlohmann/json.hpp>

namespace kjit {
namespace {

using nlohmann::json;

Error invalid(const std::string& message) {
  return make_error(ErrorCode::invalid_argument, "Triton metadata: " + message);
}

// An unsigned field; absent gives `fallback`.
Result<uint64_t> unsigned_field(const json& metadata, const char* name, uint64_t fallback, uint64_t max) {
  if (!metadata.contains(name) || metadata[name].is_null()) return fallback;
  const json& value = metadata[name];
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<uint64_t>() > max)
    return invalid(std::string(name) + " is not an integer from 0 to " + std::to_string(max));
  return value.get<uint64_t>();
}

bool flag(const json& metadata, const char* name) {
  return metadata.contains(name) && metadata[name].is_boolean() && metadata[name].get<bool>();
}

uint32_t or_one(uint32_t v) { return v == 0 ? 1 : v; }

bool same_dims(const Dim3& a, const Dim3& b) {
  return or_one(a.x) == or_one(b.x) && or_one(a.y) == or_one(b.y) && or_one(a.z) == or_one(b.z);
}

}  // namespace

Result<TritonLaunch> read_triton_launch(std::string_view metadata_json) {
  const json metadata = json::parse(metadata_json, nullptr, false);
  if (!metadata.is_object()) return invalid("not a JSON object");
  TritonLaunch out;
  Result<uint64_t> num_warps = unsigned_field(metadata, "num_warps", 0, 64);
  if (!num_warps) return num_warps.error();
  if (*num_warps == 0) return invalid("num_warps is missing");
  out.num_warps = static_cast<uint32_t>(*num_warps);
  Result<uint64_t> num_ctas = unsigned_field(metadata, "num_ctas", 1, 16);
  if (!num_ctas) return num_ctas.error();
  out.num_ctas = static_cast<uint32_t>(std::max<uint64_t>(*num_ctas, 1));
  if (metadata.contains("cluster_dims") && metadata["cluster_dims"].is_array() && metadata["cluster_dims"].size() == 3) {
    const json& dims = metadata["cluster_dims"];
    for (const json& d : dims)
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > 16) return invalid("cluster_dims is not three integers");
    out.cluster_dims = {dims[0].get<uint32_t>(), dims[1].get<uint32_t>(), dims[2].get<uint32_t>()};
  }
  Result<uint64_t> shared = unsigned_field(metadata, "shared", 0, 1u << 30);
  if (!shared) return shared.error();
  out.shared_bytes = static_cast<uint32_t>(*shared);
  out.cooperative = flag(metadata, "launch_cooperative_grid");
  out.programmatic_dependent_launch = flag(metadata, "launch_pdl");
  constexpr uint64_t k_max_scratch = uint64_t{1} << 32;
  for (auto [name, field] : {std::pair{"global_scratch_size", &out.global_scratch_size},
                             std::pair{"global_scratch_align", &out.global_scratch_align},
                             std::pair{"profile_scratch_size", &out.profile_scratch_size},
                             std::pair{"profile_scratch_align", &out.profile_scratch_align}}) {
    Result<uint64_t> value = unsigned_field(metadata, name, *field, k_max_scratch);
    if (!value) return value.error();
    *field = *value;
  }
  return out;
}

Result<LaunchConfig> triton_launch_config(const TritonLaunch& triton, LaunchConfig caller, uint32_t warp_size) {
  const Dim3 block{triton.num_warps * warp_size, 1, 1};
  if (caller.block.x != 0 && !same_dims(caller.block, block))
    return make_error(ErrorCode::invalid_argument, "this Triton kernel was compiled for num_warps=" +
                                                       std::to_string(triton.num_warps) + ": its block is " +
                                                       std::to_string(block.x) + " threads, not the block given");
  caller.block = block;
  if (caller.dynamic_shared_bytes != 0 && caller.dynamic_shared_bytes != triton.shared_bytes)
    return make_error(ErrorCode::invalid_argument, "this Triton kernel uses " + std::to_string(triton.shared_bytes) +
                                                       " bytes of dynamic shared memory, as compiled; " +
                                                       std::to_string(caller.dynamic_shared_bytes) + " were given");
  caller.dynamic_shared_bytes = triton.shared_bytes;
  Dim3 cluster{};
  if (triton.num_ctas > 1) cluster = {triton.num_ctas, 1, 1};
  else if (triton.cluster_dims.x * or_one(triton.cluster_dims.y) * or_one(triton.cluster_dims.z) > 1) cluster = triton.cluster_dims;
  const bool caller_cluster = caller.cluster.x != 0 || caller.cluster.y != 0 || caller.cluster.z != 0;
  if (caller_cluster && !same_dims(caller.cluster, cluster.x == 0 ? Dim3{1, 1, 1} : cluster))
    return make_error(ErrorCode::invalid_argument, "this Triton kernel runs in clusters of " +
                                                       std::to_string(or_one(cluster.x) * or_one(cluster.y) * or_one(cluster.z)) +
                                                       " blocks (num_ctas), as compiled; another cluster was given");
  // Triton's grid counts programs; a program of num_ctas blocks is a cluster.
  if (triton.num_ctas > 1) caller.grid.x = or_one(caller.grid.x) * triton.num_ctas;
  caller.cluster = cluster;
  caller.cooperative = caller.cooperative || triton.cooperative;
  caller.programmatic_dependent_launch = caller.programmatic_dependent_launch || triton.programmatic_dependent_launch;
  return caller;
}

uint64_t triton_scratch_bytes(uint64_t per_program, const Dim3& grid, uint32_t num_ctas) {
  if (per_program == 0) return 0;
  return per_program * or_one(grid.x) * or_one(grid.y) * or_one(grid.z) * std::max<uint32_t>(num_ctas, 1);
}

std::vector<uint64_t> triton_scratch_arguments(const TritonLaunch& triton, uint32_t param_bytes, size_t given_bytes,
                                               const Dim3& programs) {
  const size_t aligned = (given_bytes + 7) / 8 * 8;
  if (param_bytes <= given_bytes || param_bytes < aligned) return {};
  const size_t gap = param_bytes - aligned;
  if (gap % 8 != 0 || gap / 8 == 0 || gap / 8 > 2) return {};
  std::vector<uint64_t> sizes{triton_scratch_bytes(triton.global_scratch_size, programs, triton.num_ctas)};
  if (gap / 8 == 2) sizes.push_back(triton_scratch_bytes(triton.profile_scratch_size, programs, triton.num_ctas));
  return sizes;
}

}  // namespace kjit
