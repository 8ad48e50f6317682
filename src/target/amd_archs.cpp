// The AMD architecture table.
#include "target/amd_archs.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

namespace kjit {
namespace {

constexpr uint32_t k_lds = 64 * 1024;

// Every processor here but gfx950 is one LLVM 19's AMDGPU back end accepts;
// gfx950 is built from Triton IR only, by Triton's own LLVM. LDS per
// workgroup: 64 KiB (RDNA's 128 KiB per WGP is shared by two workgroups in
// WGP mode), 160 KiB on CDNA4.
constexpr std::array<AmdArchInfo, 23> k_amd_archs{{
    {"gfx900", "GCN5 (Vega 10)", k_lds, 64, false, 1024, "5.2"},
    {"gfx906", "GCN5 (Vega 20, MI50)", k_lds, 64, false, 1024, "5.2"},
    {"gfx908", "CDNA1 (MI100)", k_lds, 64, false, 1024, "5.2"},
    {"gfx90a", "CDNA2 (MI200)", k_lds, 64, false, 1024, "5.2"},
    {"gfx90c", "GCN5 (Renoir APU)", k_lds, 64, false, 1024, "5.2"},
    {"gfx940", "CDNA3 (MI300, early)", k_lds, 64, false, 1024, "6.0"},
    {"gfx941", "CDNA3 (MI300, early)", k_lds, 64, false, 1024, "6.0"},
    {"gfx942", "CDNA3 (MI300)", k_lds, 64, false, 1024, "6.0"},
    {"gfx950", "CDNA4 (MI350)", 160 * 1024, 64, false, 1024, "7.0", false},
    {"gfx1010", "RDNA1", k_lds, 32, true, 1024, "5.2"},
    {"gfx1011", "RDNA1", k_lds, 32, true, 1024, "5.2"},
    {"gfx1012", "RDNA1", k_lds, 32, true, 1024, "5.2"},
    {"gfx1030", "RDNA2", k_lds, 32, true, 1024, "5.2"},
    {"gfx1031", "RDNA2", k_lds, 32, true, 1024, "5.2"},
    {"gfx1032", "RDNA2", k_lds, 32, true, 1024, "5.2"},
    {"gfx1100", "RDNA3", k_lds, 32, true, 1024, "5.5"},
    {"gfx1101", "RDNA3", k_lds, 32, true, 1024, "5.5"},
    {"gfx1102", "RDNA3", k_lds, 32, true, 1024, "5.5"},
    {"gfx1103", "RDNA3 (APU)", k_lds, 32, true, 1024, "5.7"},
    {"gfx1150", "RDNA3.5", k_lds, 32, true, 1024, "6.2"},
    {"gfx1151", "RDNA3.5", k_lds, 32, true, 1024, "6.2"},
    {"gfx1200", "RDNA4", k_lds, 32, true, 1024, "6.4"},
    {"gfx1201", "RDNA4", k_lds, 32, true, 1024, "6.4"},
}};

// "5.2.21153" -> {5, 2, 21153}; what does not parse stops the list.
std::vector<uint32_t> version_parts(std::string_view text) {
  std::vector<uint32_t> parts;
  while (!text.empty()) {
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{}) break;
    parts.push_back(value);
    text.remove_prefix(end - text.data());
    if (text.empty() || text.front() != '.') break;
    text.remove_prefix(1);
  }
  return parts;
}

}  // namespace

std::span<const AmdArchInfo> known_amd_archs() { return k_amd_archs; }

const AmdArchInfo* find_amd_arch(std::string_view processor) {
  auto it = std::find_if(k_amd_archs.begin(), k_amd_archs.end(),
                         [&](const AmdArchInfo& a) { return a.processor == processor; });
  return it == k_amd_archs.end() ? nullptr : &*it;
}

std::string describe_known_amd_targets() {
  std::string out;
  for (const AmdArchInfo& a : k_amd_archs) out += (out.empty() ? "hip:" : ", hip:") + std::string(a.processor);
  return out;
}

bool hiprtc_builds(const AmdArchInfo& arch, std::string_view rocm_version) {
  std::vector<uint32_t> have = version_parts(rocm_version);
  std::vector<uint32_t> need = version_parts(arch.min_rocm_hiprtc);
  if (have.empty()) return false;
  have.resize(std::max(have.size(), need.size()));
  need.resize(have.size());
  return have >= need;
}

std::string describe_hiprtc_targets(std::string_view rocm_version) {
  std::string out;
  for (const AmdArchInfo& a : k_amd_archs)
    if (hiprtc_builds(a, rocm_version)) out += (out.empty() ? "hip:" : ", hip:") + std::string(a.processor);
  return out.empty() ? "none" : out;
}

}  // namespace kjit
