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

// A plugin the daemon's configuration gives a build ([[triton.plugin]]): a
// pass plugin library, loaded the way the build's release loads plugins, or
// settings for a plugin package installed in the build's environment; with
// the variables it reads, which the build's interpreters get from here alone.
struct TritonConfiguredPlugin {
  std::string library;  // absolute path; "" for a package's settings
  std::string sha256;   // the library's
  std::string package;  // the installed package it configures ("triton-utlx"); "" for a library
  std::map<std::string, std::string> environment;
  // How requests name it (plugins switched off): the package, else the library's path.
  const std::string& name() const { return package.empty() ? library : package; }
  bool operator==(const TritonConfiguredPlugin&) const = default;
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
  // How it loads pass plugin libraries: "extend_with" (Triton 3.9, at any
  // time), "TRITON_PLUGIN_PATHS" (Triton 3.8, while libtriton is imported),
  // "" none.
  std::string plugin_loader;
  std::vector<TritonConfiguredPlugin> configured_plugins;
  // A newer ptxas-blackwell another build bundles, for the CUDA
  // architectures this build's own does not know but can build with it
  // (Triton 3.8's 13.3 refuses sm_107a; 3.9's 13.4 takes it): its compiles
  // for them run with TRITON_PTXAS_BLACKWELL_PATH naming it, as a Triton
  // process pointed at it does. Those archs are in cuda_archs too.
  TritonPtxas borrowed_ptxas;
  std::string borrowed_from;  // the build that bundles it
  std::vector<uint32_t> borrowed_cuda_archs;
  // The description as the build gave it (JSON): handed to workers so that
  // they know the daemon's builds without asking them again.
  std::string description;

  // What the cache key holds of the build: its core (distribution, version,
  // the digests of libtriton.so and of each ptxas), then one entry per
  // plugin, by name ("triton-utlx", "/opt/p/libx.so"): an
  // installed package's version, library digests and hook digest with its
  // configured variables; a configured library's digest and variables.
  // identity() is all of them in one line.
  std::string core_identity() const;
  std::vector<std::pair<std::string, std::string>> plugin_identities() const;
  std::string identity() const;
  // Every plugin a request may switch off, by the name it uses: installed
  // packages' distributions, configured libraries' paths.
  std::vector<std::string> plugin_names() const;
  // The variables its interpreters start with for the configured plugins
  // ("NAME=value": the plugins' own variables, handed to the worker script
  // as JSON, and the libraries a TRITON_PLUGIN_PATHS build loads at import).
  std::vector<std::string> interpreter_environment() const;
  // The configured libraries a job loads itself (an extend_with build's).
  std::vector<std::string> job_plugin_libraries() const;
  // The backend name Triton's options are described under for a target.
  static std::string_view backend_of(const Target& target) { return target.is_amd() ? "hip" : "cuda"; }
  bool builds(const Target& target) const;
  // The lent ptxas a compile for this target runs, or nullptr for its own.
  const TritonPtxas* borrowed_ptxas_for(const Target& target) const;
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
// Whether triton_builds() answers at once: no discovery is still to come or
// running. A gRPC callback thread asks before it reads a request, since
// waiting there for a discovery (seconds) holds a thread gRPC needs for the
// connections' pings.
bool triton_builds_known();
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
