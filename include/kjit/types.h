// Value types shared by the kjit client API and the compiler core: what goes
// in (input kinds, artifacts) and what a compiled kernel looks like.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// tileir: Tile IR bytecode (cuTile's output), assembled by tileiras.
enum class InputKind { cuda_source, ptx, llvm_ir, llvm_bitcode, hip_source, tileir, triton };
// fatbin: several targets' cubins and PTX in one file, the answer to a
// request with several targets; never a cache entry of its own.
// hsaco: an AMD GPU code object (ELF). hip_bundle: several gfx targets'
// code objects in one clang offload bundle, the AMD answer to a request with
// several targets; like fatbin, never a cache entry of its own.
enum class ArtifactKind { cubin, ptx, fatbin, hsaco, hip_bundle };

// Spellings used on the command line, in JSON and in logs ("cuda-source").
std::string_view to_string(InputKind kind);
std::string_view to_string(ArtifactKind kind);
std::optional<InputKind> parse_input_kind(std::string_view text);
std::optional<ArtifactKind> parse_artifact_kind(std::string_view text);

// An edit a request makes to its Triton build's stages, after the daemon's
// own [[edits]]: op is "insert-before", "insert-after", "disable",
// "replace" or "override-stage"; anchor ("PASS" or "STAGE/PASS") and pass
// for the inserts, disable and replace; stage and passes for override-stage.
struct TritonEdit {
  std::string op;
  std::string anchor;
  std::string pass;
  std::string stage;
  std::vector<std::string> passes;
  bool operator==(const TritonEdit&) const = default;
};

struct Dim3 {
  uint32_t x = 0, y = 0, z = 0;
  bool is_set() const { return x != 0 || y != 0 || z != 0; }
  bool operator==(const Dim3&) const = default;
};

// What a compiled kernel needs at launch, read from the binary itself.
// Zero means "not constrained by the binary".
struct KernelInfo {
  std::string name;           // source-level name: "vector_add", "scale<float>"
  std::string lowered_name;   // the symbol in the binary, as given to cuModuleGetFunction
  uint32_t registers = 0;     // per thread
  uint32_t static_shared_bytes = 0;   // as ptxas reports it (-Xptxas -v); AMD: group segment (LDS)
  uint32_t shared_section_bytes = 0;  // size of .nv.shared.<kernel>; larger on sm_90+
  uint32_t local_bytes = 0;           // per-thread stack frame; AMD: private segment
  uint32_t max_threads_per_block = 0; // __launch_bounds__ / .maxntid; AMD: max flat workgroup size
  Dim3 required_threads;              // .reqntid
  Dim3 cluster_dims;                  // __cluster_dims__ / .reqnctapercluster
  uint32_t max_registers = 0;         // .maxnreg / maxrregcount
  uint32_t param_bytes = 0;           // size of the kernel parameter buffer; AMD: kernarg segment
  uint32_t max_cluster_rank = 0;      // .maxclusterrank: blocks a cluster may have at most
  // AMD code objects only (hsaco): `registers` holds the VGPRs, these the rest.
  uint32_t scalar_registers = 0;      // SGPRs per wavefront
  uint32_t wavefront_size = 0;        // 32 or 64
  bool operator==(const KernelInfo&) const = default;
};

struct PassTiming {
  std::string pass;  // "nvrtc-compile", "llvm-passes", ...
  double ms = 0;
};

// One stage that ran, with the passes it ran, in order.
struct StageTiming {
  std::string stage;  // "nvrtc", "nvjitlink", "llvm-opt", ...
  double ms = 0;
  std::vector<PassTiming> passes;
};

// One named input of the cache key ("target", "input.digest", ...).
struct KeyComponent {
  std::string name;
  std::string value;  // printable; large values (sources) enter as digests
  bool operator==(const KeyComponent&) const = default;
};

}  // namespace kjit
