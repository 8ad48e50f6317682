// What kjit knows about each input kind, one row per kind, so that no code
// of the daemon or the core switches over kinds: a new kind is its enum
// value, its row here, its wire value and its pipeline.
#pragma once

#include <span>
#include <string_view>

#include "kjit/types.h"

namespace kjit {

// Which options a kind takes, read by the option allowlists
// (pipeline/compile_options.cpp for cuda: targets, pipeline/hip_options.cpp
// for hip: targets) instead of asking for particular kinds.
enum class OptionFamily {
  none,         // no front end: only the linker's options (PTX)
  cuda_source,  // NVRTC's front-end options
  hip_source,   // HIPRTC's front-end options
  llvm,         // the options the LLVM stages read (IR, text or bitcode)
  tileir,       // tileiras' options: optimization level, line info, debug info
  triton,       // Triton's own options ("num_warps=8"), checked against the build's options class
};

struct InputKindInfo {
  InputKind kind;
  // The spelling on the command line, in JSON, logs and pipeline files: the
  // wire's enum value name without INPUT_KIND_, lower-case, '-' for '_'
  // (INPUT_KIND_CUDA_SOURCE is "cuda-source"); a test holds the two equal.
  std::string_view name;
  // Shown in diagnostics when the request names no file. Its extension is
  // the wire's first file extension for the kind (a test holds them equal).
  std::string_view default_file_name;
  bool text;    // text is refused when it holds a NUL byte
  bool source;  // C++ source: takes headers, name expressions and includes
  OptionFamily options;
  // The IR the pipeline starts from, as pipeline/pipeline_spec.h spells an
  // IrKind ("llvm"): the core's types know no pipeline; ir_kind_of reads it.
  std::string_view ir;
  // The bytes a binary kind's input starts with; the edge refuses input
  // without them (INVALID_ARGUMENT) before any toolchain sees it. Empty:
  // no check.
  std::string_view magic = {};
};

// Every kind, in the order of the enum.
std::span<const InputKindInfo> input_kinds();

// The row of a kind; a value outside the enum gets a row named "unknown"
// that is text, no source, takes no options and starts from no IR.
const InputKindInfo& input_kind_info(InputKind kind);

}  // namespace kjit
