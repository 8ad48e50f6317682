// Stage "hiprtc": HIP source -> an AMDGPU code object (hsaco ELF) with
// HIPRTC, in-process, with no GPU and no hipInit.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backends/hiprtc/hiprtc_api.h"

namespace kjit {

struct HipCompileRequest {
  std::string_view source;
  std::string_view name;                                        // shown in logs, e.g. "k.hip"
  const std::map<std::string, std::string>* headers = nullptr;  // include name -> content
  std::vector<std::string> name_expressions;                    // e.g. "scale<float>"
  std::string processor;                                        // "gfx90a"
  std::vector<std::string> options;                             // already allowlisted by the caller
  // Processors HIPRTC is known to compile for. comgr aborts the process for
  // ones it does not know (ROCm 5.2.3: gfx940-942, gfx1100), so when this is
  // non-empty any other processor is refused before HIPRTC sees it.
  std::vector<std::string> allowed_processors;
};

struct HsacoOutput {
  std::string hsaco;  // a bare ELF code object, never an offload bundle
  std::string log;
  std::map<std::string, std::string> lowered_names;  // name expression -> symbol
};

// Compiles for `processor` (passed as --offload-arch=<processor>, after
// `options`). A processor not of the form gfx[0-9a-f]+, or not in a given
// allowlist, or an option that would choose another one (--offload-arch,
// -mcpu, ...), is invalid_argument before HIPRTC is called. A compile error is
// invalid_argument whose message ends with HIPRTC's whole log (also in
// Error::log); a HIPRTC failure not caused by the input is internal.
// Call from a compile worker, never the daemon: HIPRTC can abort the
// process. comgr writes scratch files under $TMPDIR (/tmp when unset) and
// fails with an empty log when it cannot.
Result<HsacoOutput> compile_hip_to_hsaco(const HiprtcApi& api, const HipCompileRequest& request);

// The code object for `processor` out of what HIPRTC returned: a bare ELF as
// it is, or the matching "hip"/"hipv4" entry of a clang offload bundle.
// internal when there is no such entry or the bundle is malformed: HIPRTC
// was asked for that processor, so the fault is not the caller's.
Result<std::string> extract_code_object(std::string_view code, std::string_view processor);

}  // namespace kjit
