// tileiras, NVIDIA's Tile IR assembler: Tile IR bytecode (what cuTile
// exports) in, a cubin out. It is a program, not a library: kjit finds it,
// asks it what it reads and builds, and runs it as a child process. It loads
// libnvvm from beside itself and runs the ptxas beside it, so a confined
// worker must be allowed to read its wheel and execute exactly those two
// (tileiras_executables).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"

namespace kjit {

struct TileirasSearch {
  // The `tileiras` configuration key: the program itself. Set, it is the
  // only place looked at.
  std::string configured;
  // Python environments, site-packages or nvidia/cuNN directories
  // (toolkit_paths): tileiras is nvidia/cuNN/bin/tileiras in NVIDIA's wheel.
  std::vector<std::string> wheel_paths;
  // The project's own prefix (scripts/install-deps.sh's .deps/tileiras).
  std::string local_prefix;
  bool operator==(const TileirasSearch&) const = default;
};

struct TileirasToolchain {
  std::string path;     // tileiras, canonical
  std::string ptxas;    // the ptxas beside it, which tileiras runs
  std::string root;     // the directory holding bin/ (and lib/ with libnvvm, nvvm/)
  std::string version;  // "13.4.92"
  // A digest of its whole --version text (release and build lines): two
  // builds of one release are two toolchains to the cache key.
  std::string build_digest;
  std::vector<std::string> bytecode_versions;  // --list-versions: "13.1", ...
  std::vector<uint32_t> sms;                   // --gpu-name's values: 80, 86, ...
  std::string describe() const;                // "tileiras 13.4.92 at /…/bin/tileiras"
};

// The project's prefix for tileiras: beside the CUDA wheels' prefix
// (KJIT_LOCAL_TOOLKIT_PREFIX), named tileiras; "" when the build named none.
std::string default_local_tileiras_prefix();

// The first tileiras found, asked for its version, bytecode versions and
// GPUs. failed_precondition naming where it looked (or why the one found
// does not answer).
Result<TileirasToolchain> find_tileiras(const TileirasSearch& search);
// Asks the program at `path` (run with CUDA_HOME unset).
Result<TileirasToolchain> probe_tileiras(const std::string& path);

// The process's tileiras, found once on first use with the search set last
// (the daemon and each worker set it from their configuration before
// building their pipeline); setting the same search again keeps what was
// found. Until set, the local prefix only.
void set_tileiras_search(TileirasSearch search);
const Result<TileirasToolchain>& tileiras_toolchain();

// What a confined worker must be allowed to run for tileiras: the program
// and its ptxas. Empty when tileiras was not found.
std::vector<std::string> tileiras_executables();

// Where the process's tileiras is, from the file system alone: found as
// tileiras_toolchain finds it, but never run. A worker confines itself with
// this at its start, so a start runs no program; it asks tileiras what it
// is only when its first Tile IR job needs to know.
struct TileirasLocation {
  std::string path, ptxas, root;  // as in TileirasToolchain
};
std::optional<TileirasLocation> tileiras_location();

// Before running it: invalid_argument when the input is not Tile IR
// bytecode or the target is not one tileiras builds (listing those it
// does); failed_precondition when the bytecode's version is not one it
// reads (naming both).
Status check_tileir_input(const TileirasToolchain& tileiras, std::string_view bytecode, uint32_t sm);
// "13.4" from the bytecode's header; "" when it has none.
std::string tileir_bytecode_version(std::string_view bytecode);

// A program run to its end: its exit status (-signal when killed by one)
// and what it wrote on stdout and stderr together.
struct ToolRun {
  int exit_code = 0;
  std::string output;
};
// Runs argv[0] (an absolute path) with the given environment and working
// directory, in the caller's process group, so that whoever bounds the
// caller by killing its group (the worker pool) stops the tool and what it
// started too. deadline_exceeded, after killing the child, when it outlives
// `timeout`; the output is bounded to its last 64 KiB.
Result<ToolRun> run_tool(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& working_dir, std::chrono::milliseconds timeout);

struct TileirasRequest {
  std::string_view bytecode;
  uint32_t sm = 0;
  std::vector<std::string> options;  // tileiras' spellings (CheckedOptions::tileiras)
  std::string input_name;            // for messages
  // A directory the call may create its own subdirectory in (the worker's
  // TMPDIR); tileiras gets that subdirectory as TMPDIR, and it is removed
  // after the run.
  std::string temp_parent;
  std::chrono::milliseconds timeout{600'000};
};
struct TileirasOutput {
  std::string cubin;
  std::string log;
};
// check_tileir_input, then tileiras --gpu-name=sm_<N> <options> -o out.cubin,
// with CUDA_HOME unset (tileiras would take that toolkit's libraries and
// fail) and TMPDIR the private subdirectory. invalid_argument with its
// output when it refuses the input.
Result<TileirasOutput> assemble_tile_ir(const TileirasToolchain& tileiras, const TileirasRequest& request);

}  // namespace kjit
