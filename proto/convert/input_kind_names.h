// The input kinds as the wire describes them: every InputKind value of
// kjit/v1/compiler.proto but UNSPECIFIED, with the names and file extensions
// its options give. The C++ CLI reads kinds from here and the Python client
// from the same descriptor, so both accept the same spellings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/v1/compiler.pb.h"

namespace kjit {

struct WireInputKind {
  v1::InputKind value = v1::INPUT_KIND_UNSPECIFIED;
  std::string enum_name;                // "INPUT_KIND_CUDA_SOURCE"
  std::string name;                     // "cuda-source", derived from enum_name
  std::vector<std::string> aliases;     // "cuda", "cu"
  std::vector<std::string> extensions;  // ".cu", ".cuh"
};

// In the proto's order; read from the descriptor once.
const std::vector<WireInputKind>& wire_input_kinds();

// "INPUT_KIND_CUDA_SOURCE" -> "cuda-source".
std::string canonical_input_kind_name(std::string_view enum_name);

// A kind from what a user typed, as the Python client's parse_kind reads it:
// a value name in any case ("INPUT_KIND_PTX", "input_kind_ptx"), or, case
// aside and with '_' for '-', a canonical name, an alias or a file
// extension ("cuda", "CUDA_SOURCE", ".cu"). nullopt for anything else and
// for UNSPECIFIED.
std::optional<v1::InputKind> parse_wire_input_kind(std::string_view text);

// The kind a file extension (".cu", any case) names, if any.
std::optional<v1::InputKind> wire_input_kind_of_extension(std::string_view extension);

// For help and usage texts: "cuda-source, ptx, llvm-ir, llvm-bitcode, hip-source",
// "cuda, cu, llvm, ll, bitcode, bc, hip" and ".cu, .cuh, .ptx, .ll, .bc, .hip".
std::string wire_input_kind_names();
std::string wire_input_kind_aliases();
std::string wire_input_kind_extensions();

}  // namespace kjit
