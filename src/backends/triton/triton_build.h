// Triton builds as toolchains: a Python environment holding `triton`
// (upstream Triton, fbtriton with TLX, ...), found at start, described by
// asking its own interpreter (kjit's Triton worker script, "describe"), and
// routed to per request like a CUDA toolkit. The daemon never links Triton
// or its LLVM: what it knows of a build is this description.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "target/target.h"

namespace kjit {

struct TritonPtxas {
  std::string path;
  std::string sha256;
  std::string version;  // "12.9", "13.4"
};

// A plugin package installed in a build's environment (uTLX: a library
// Triton loads from TRITON_PLUGIN_PATHS, and a Python package whose import
// sets a stages hook): part of the build, run as its own processes run it.
struct TritonPluginPackage {
  std::string distribution;  // "triton-utlx"
  std::string version;       // "3.8.0.post16"
  std::vector<TritonPtxas> libraries;  // path and sha256 (version unused)
  std::string stages_hook_sha256;      // the digest of its hook's key text; "" for none
};

struct TritonBuild {
  std::string name;          // "triton-3.9.0": distribution and version
  std::string distribution;  // "triton", "fbtriton"
  std::string version;       // "3.9.0"
  std::string python;        // the interpreter its workers run (absolute)
  std::vector<std::string> backends;      // "nvidia", "amd"
  std::vector<uint32_t> cuda_archs;       // SM numbers its ptxas builds
  std::vector<std::string> hip_archs;     // "gfx942", ...
  // Options a request may set, by backend ("cuda", "hip"): name -> type
  // ("int", "int?", "bool", "str", "str?", "float").
  std::map<std::string, std::map<std::string, std::string>> options;
  std::map<std::string, std::string> refused_options;  // name -> why
  std::string libtriton_sha256;
  std::vector<TritonPtxas> ptxas;
  std::vector<std::string> executables;  // what its compiles may run (its ptxas, ...)
  std::vector<std::string> read_paths;   // what its interpreter must read
  std::vector<std::string> plugins;      // plugin libraries it ships
  std::vector<TritonPluginPackage> installed_plugins;
  bool tlx = false;
  // Where its TLX comes from: compiled into Triton (fbtriton: TTIR as TLX's
  // front end leaves it, `tlx.has_explicit_local_mem_access`), or a plugin
  // package (uTLX, whose front end converts TLX kernels further); "" without.
  std::string tlx_provider;
  // The description as the build gave it (JSON): handed to workers so that
  // they know the daemon's builds without asking them again.
  std::string description;

  // What the cache key holds of the build: distribution, version, the
  // digests of libtriton.so and of each ptxas, and each installed plugin
  // package's distribution, version, library digests and hook digest.
  std::string identity() const;
  // The backend name Triton's options are described under for a target.
  static std::string_view backend_of(const Target& target) { return target.is_amd() ? "hip" : "cuda"; }
  bool builds(const Target& target) const;
};

// Reads a build's description (the worker script's answer to "describe").
// invalid_argument naming what is missing.
Result<TritonBuild> parse_triton_build(std::string_view description, const std::string& python);

// Where builds are looked for: the configured ones (a virtual environment's
// directory, or a Python interpreter), then every environment under the
// project's prefix (scripts/install-deps.sh's .deps/triton-builds).
struct TritonBuildSearch {
  std::vector<std::string> configured;
  std::string local_prefix;
  bool operator==(const TritonBuildSearch&) const = default;
};
std::string default_local_triton_prefix();
// The interpreters to ask, in search order, without duplicates.
std::vector<std::string> triton_build_candidates(const TritonBuildSearch& search);

// The process's builds: the daemon sets them once it has asked each
// candidate, a worker from its setup. The default is the newest upstream
// build ("triton"), else the newest of any.
void set_triton_builds(std::vector<TritonBuild> builds);
// Where the builds come from when nobody set them: called once, by the first
// triton_builds() of the process, the others waiting for it.
void set_triton_builds_source(std::function<std::vector<TritonBuild>()> source);
const std::vector<TritonBuild>& triton_builds();
const TritonBuild* default_triton_build();
const TritonBuild* find_triton_build(std::string_view name);

// The build a request compiles with: the one it names, else the default,
// unless the module uses TLX ops the default lacks. Then the first build
// whose TLX takes the module's form: TLX's own front end's TTIR (it carries
// tlx.has_explicit_local_mem_access) goes to a build with TLX compiled in
// (fbtriton), any other module with tlx. ops to a build whose TLX is a
// plugin (Triton 3.8 + uTLX); the two IRs are not interchangeable. With no
// build of the module's form, any build with TLX (its diagnostic says what
// it cannot take). failed_precondition naming the builds that could take
// it, or the builds present, when none has TLX.
Result<const TritonBuild*> choose_triton_build(std::string_view requested, std::string_view module_text);

// Checks a request's Triton options ("name" -> text) against the build's
// options for the target's backend and gives them in canonical form, sorted:
// "num_warps=8", "enable_fp_fusion=false". invalid_argument for an unknown
// option (listing the known ones), a refused one (saying why) or a value of
// the wrong type.
Result<std::vector<std::string>> check_triton_options(const TritonBuild& build, const Target& target,
                                                      const std::map<std::string, std::string>& options);

}  // namespace kjit
