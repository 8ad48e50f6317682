// Targets ("cuda:90a") and the table of what kjit knows about each GPU
// architecture. What differs by architecture is data here, not `if` chains.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kjit/status.h"
#include "target/amd_archs.h"

namespace kjit {

enum class Vendor { nvidia, amd };
std::string_view to_string(Vendor vendor);  // "NVIDIA", "AMD"

// One row per NVIDIA architecture. Limits are from public CUDA documentation
// (the CUDA programming guide's tables); a device's own attributes win when
// one is present.
struct ArchInfo {
  uint32_t sm;                     // 90 for sm_90
  std::string_view family;         // "Hopper"
  bool has_arch_specific;          // sm_XXa exists
  bool has_family_specific;        // sm_XXf exists
  std::string_view min_cuda;       // first CUDA toolkit that can compile for it
  std::string_view min_ptx_isa;    // first PTX ISA with this .target
  uint32_t smem_per_block_optin;   // bytes; 0 = unknown
  uint32_t smem_per_sm;            // bytes; 0 = unknown
  bool oversized_shared_memory;    // CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE exists
  uint32_t max_cluster_size;       // CTAs, with the non-portable attribute; 0 = no clusters
  std::string_view llvm_cpu;       // the processor LLVM 19 gets: itself, or the newest it knows
  uint32_t tensor_memory_columns;  // tcgen05 tensor memory: 128 lanes x this many 32-bit columns
};

// Limits every architecture here shares (CUDA programming guide).
inline constexpr uint32_t k_max_threads_per_block = 1024;
inline constexpr uint32_t k_default_dynamic_shared_bytes = 48 * 1024;  // without opt-in
inline constexpr uint32_t k_portable_cluster_size = 8;
// Shared memory the driver reserves per block on sm_80 and newer.
inline constexpr uint32_t k_reserved_shared_bytes_per_block = 1024;

std::span<const ArchInfo> known_archs();
const ArchInfo* find_arch(uint32_t sm);

// An NVIDIA target ("cuda:90a": sm and suffix) or an AMD one ("hip:gfx90a":
// processor). The NVIDIA accessors below are for NVIDIA targets only, the
// AMD ones for AMD targets only; pipelines check the vendor first.
struct Target {
  Vendor vendor = Vendor::nvidia;
  uint32_t sm = 0;
  char suffix = '\0';  // '\0', 'a' (arch-specific) or 'f' (family-specific)
  std::string processor;  // AMD: "gfx90a"

  bool is_amd() const { return vendor == Vendor::amd; }
  std::string canonical() const;     // "cuda:90a", "hip:gfx90a"
  std::string sm_name() const;       // "sm_90a", for ptxas / nvJitLink
  std::string compute_name() const;  // "compute_90a", for NVRTC's PTX output
  const ArchInfo& arch() const;      // valid for a parsed NVIDIA Target
  const AmdArchInfo& amd_arch() const;  // valid for a parsed AMD Target
  bool operator==(const Target&) const = default;
};

// A range of architectures, both ends included: which targets a toolkit
// other than the default one builds.
struct TargetRange {
  uint32_t min_sm = 0, max_sm = 0;
  bool contains(const Target& target) const { return target.sm >= min_sm && target.sm <= max_sm; }
  std::string describe() const;  // "sm_100..sm_121"
  bool operator==(const TargetRange&) const = default;
};

// How the LLVM path builds for a target: what LLVM is given, and what the
// PTX it writes is retargeted to (Triton's method for newer targets).
struct LlvmCodegenPlan {
  std::string cpu;             // "sm_90", "sm_90a"
  std::string features;        // "+ptx85"
  std::string ptx_target;      // "sm_107", "sm_100a"
  std::string ptx_min_version; // "9.4"
  bool retargeted = false;     // ptx_target differs from cpu
};
LlvmCodegenPlan llvm_codegen_plan(const Target& target);

// The newest PTX ISA LLVM 19's NVPTX back end writes.
inline constexpr std::string_view k_llvm_max_ptx_feature = "+ptx85";

// Accepts "cuda:90", "cuda:90a", "cuda:100f" and the alias "sm_90a"; and
// "hip:gfx90a" with the alias "gfx90a".
// An unknown architecture or suffix is invalid_argument listing the known ones.
Result<Target> parse_target(std::string_view text);

// "cuda:75, cuda:80, ..., cuda:90a, ..." for error messages: the given SM
// numbers with the suffixes the table knows for them, or every known target.
std::string describe_targets(std::span<const uint32_t> sms);
std::string describe_known_targets();  // NVIDIA's and AMD's

}  // namespace kjit
