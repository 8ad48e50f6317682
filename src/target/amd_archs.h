// The AMD half of the target table: one row per gfx processor kjit builds
// for, with the limits a launch is planned against and which toolchains
// accept it. What differs by processor is data here, not `if` chains.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kjit {

struct AmdArchInfo {
  std::string_view processor;       // "gfx90a", as LLVM and HIPRTC spell it
  std::string_view family;          // "CDNA2 (MI200)"
  uint32_t lds_per_workgroup;       // bytes of LDS one workgroup may use
  uint32_t default_wavefront;       // what a compile gets without -mwavefrontsize64
  bool wavefront_64_selectable;     // RDNA: wave32 by default, wave64 on request
  uint32_t max_workgroup_size;      // work-items
  // The first ROCm release whose HIPRTC (through comgr) builds for it; an
  // older HIPRTC aborts the process when asked. 5.2 is measured: Debian's
  // ROCm 5.2.3 builds every row marked "5.2" and aborts on the others; the
  // later versions are ROCm's release notes.
  std::string_view min_rocm_hiprtc;
  // LLVM 19's AMDGPU back end knows it. Where it does not (gfx950), only a
  // Triton build, which carries its own LLVM, builds for it.
  bool llvm19_builds = true;
};

// HIP's API mirrors CUDA's: dynamic LDS beyond this needs
// hipFuncAttributeMaxDynamicSharedMemorySize on the function first.
inline constexpr uint32_t k_hip_default_dynamic_lds_bytes = 48 * 1024;

std::span<const AmdArchInfo> known_amd_archs();
const AmdArchInfo* find_amd_arch(std::string_view processor);

// "hip:gfx900, hip:gfx906, ..." for error messages.
std::string describe_known_amd_targets();

// True when a HIPRTC of `rocm_version` ("5.2.21153") builds for `arch`;
// versions compare numerically, component by component.
bool hiprtc_builds(const AmdArchInfo& arch, std::string_view rocm_version);

// "hip:gfx900, hip:gfx906, ..." of the processors that HIPRTC builds.
std::string describe_hiprtc_targets(std::string_view rocm_version);

}  // namespace kjit
