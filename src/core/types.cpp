// Spellings of the public enums, shared by the CLI, JSON output and logs;
// an input kind's is in its row of core/input_kinds.cpp.
#include "kjit/types.h"

#include <array>
#include <utility>

namespace kjit {
namespace {

constexpr std::array<std::pair<ArtifactKind, std::string_view>, 5> k_artifact_kinds{{
    {ArtifactKind::cubin, "cubin"},
    {ArtifactKind::ptx, "ptx"},
    {ArtifactKind::fatbin, "fatbin"},
    {ArtifactKind::hsaco, "hsaco"},
    {ArtifactKind::hip_bundle, "hip-bundle"},
}};

template <typename Table, typename Enum>
std::string_view spelling_of(const Table& table, Enum value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return "unknown";
}

template <typename Enum, typename Table>
std::optional<Enum> parse_spelling(const Table& table, std::string_view text) {
  for (const auto& [e, name] : table)
    if (name == text) return e;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(ArtifactKind kind) { return spelling_of(k_artifact_kinds, kind); }

std::optional<ArtifactKind> parse_artifact_kind(std::string_view text) {
  return parse_spelling<ArtifactKind>(k_artifact_kinds, text);
}

}  // namespace kjit
