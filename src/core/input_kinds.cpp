#include "core/input_kinds.h"

#include <array>

namespace kjit {
namespace {

// Tile IR bytecode's header: "\x7fTileIR\0", then the bytecode's major and
// minor version (one byte each).
constexpr std::string_view k_tileir_magic{"\x7fTileIR\0", 8};

// kind, name, default file name, text, source, options, the IR it starts
// from, the bytes a binary input starts with
constexpr auto k_input_kinds = std::to_array<InputKindInfo>({
    {InputKind::cuda_source, "cuda-source", "input.cu", true, true, OptionFamily::cuda_source, "cuda-source"},
    {InputKind::ptx, "ptx", "input.ptx", true, false, OptionFamily::none, "ptx"},
    {InputKind::llvm_ir, "llvm-ir", "input.ll", true, false, OptionFamily::llvm, "llvm"},
    {InputKind::llvm_bitcode, "llvm-bitcode", "input.bc", false, false, OptionFamily::llvm, "llvm"},
    {InputKind::hip_source, "hip-source", "input.hip", true, true, OptionFamily::hip_source, "hip-source"},
    {InputKind::tileir, "tileir", "input.tileirbc", false, false, OptionFamily::tileir, "tileir", k_tileir_magic},
    {InputKind::triton, "triton", "input.ttir", true, false, OptionFamily::triton, "triton"},
});

constexpr InputKindInfo k_unknown{InputKind{-1}, "unknown", "input", true, false, OptionFamily::none, ""};

}  // namespace

std::span<const InputKindInfo> input_kinds() { return k_input_kinds; }

const InputKindInfo& input_kind_info(InputKind kind) {
  for (const InputKindInfo& info : k_input_kinds)
    if (info.kind == kind) return info;
  return k_unknown;
}

std::string_view to_string(InputKind kind) { return input_kind_info(kind).name; }

std::optional<InputKind> parse_input_kind(std::string_view text) {
  for (const InputKindInfo& info : k_input_kinds)
    if (info.name == text) return info.kind;
  return std::nullopt;
}

}  // namespace kjit
