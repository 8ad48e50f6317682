// The architecture table and target parsing.
#include "target/target.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

namespace kjit {
namespace {

constexpr uint32_t k_kib = 1024;

// Shared memory figures: the public CUDA documentation's per-architecture
// limits (opt-in per block, per SM; 48 KiB without opt-in). sm_107's per-SM
// 328 KiB is the only public figure (Triton's change description) and is
// unverified on a device; sm_88's limits are not public. Clusters exist from
// sm_90: 8 CTAs portable, 16 with the non-portable attribute on the data
// centre parts; GeForce Blackwell (sm_120/121) stays at 8.
constexpr std::array<ArchInfo, 14> k_archs{{
    {75, "Turing", false, false, "10.0", "6.3", 64 * k_kib, 64 * k_kib, false, 0, "sm_75", 0},
    {80, "Ampere", false, false, "11.0", "7.0", 166912, 164 * k_kib, false, 0, "sm_80", 0},
    {86, "Ampere", false, false, "11.1", "7.1", 101376, 100 * k_kib, false, 0, "sm_86", 0},
    {87, "Ampere (Orin)", false, false, "11.4", "7.4", 166912, 164 * k_kib, false, 0, "sm_87", 0},
    {88, "Ampere-class", false, false, "13.0", "9.0", 0, 0, false, 0, "sm_87", 0},
    {89, "Ada", false, false, "11.8", "7.8", 101376, 100 * k_kib, false, 0, "sm_89", 0},
    {90, "Hopper", true, false, "12.0", "7.8", 232448, 228 * k_kib, false, 16, "sm_90", 0},
    {100, "Blackwell", true, true, "12.8", "8.6", 232448, 228 * k_kib, false, 16, "sm_90", 512},
    {101, "Blackwell (renamed sm_110 in CUDA 13.0)", true, true, "12.8", "8.6", 232448, 228 * k_kib, false, 16, "sm_90", 512},
    {103, "Blackwell Ultra", true, true, "12.9", "8.8", 232448, 228 * k_kib, false, 16, "sm_90", 512},
    {107, "Rubin", true, true, "13.4", "9.4", 232448, 328 * k_kib, true, 16, "sm_90", 576},
    {110, "Blackwell (Thor)", true, true, "13.0", "9.0", 232448, 228 * k_kib, false, 16, "sm_90", 512},
    {120, "Blackwell (GeForce)", true, true, "12.8", "8.7", 101376, 100 * k_kib, false, 8, "sm_90", 0},
    {121, "Blackwell (DGX Spark)", true, true, "12.9", "8.8", 101376, 100 * k_kib, false, 8, "sm_90", 0},
}};

std::string with_suffix(uint32_t sm, char suffix) {
  std::string s = std::to_string(sm);
  if (suffix) s += suffix;
  return s;
}

}  // namespace

std::span<const ArchInfo> known_archs() { return k_archs; }

const ArchInfo* find_arch(uint32_t sm) {
  auto it = std::find_if(k_archs.begin(), k_archs.end(), [&](const ArchInfo& a) { return a.sm == sm; });
  return it == k_archs.end() ? nullptr : &*it;
}

std::string_view to_string(Vendor vendor) { return vendor == Vendor::amd ? "AMD" : "NVIDIA"; }

std::string Target::canonical() const {
  return is_amd() ? "hip:" + processor : "cuda:" + with_suffix(sm, suffix);
}
std::string Target::sm_name() const { return "sm_" + with_suffix(sm, suffix); }
std::string Target::compute_name() const { return "compute_" + with_suffix(sm, suffix); }
const ArchInfo& Target::arch() const { return *find_arch(sm); }
const AmdArchInfo& Target::amd_arch() const { return *find_amd_arch(processor); }

LlvmCodegenPlan llvm_codegen_plan(const Target& target) {
  const ArchInfo& arch = target.arch();
  LlvmCodegenPlan plan;
  plan.cpu = std::string(arch.llvm_cpu);
  // Arch-specific code only where LLVM knows that very architecture.
  if (target.suffix == 'a' && plan.cpu == "sm_" + std::to_string(target.sm)) plan.cpu += 'a';
  plan.features = std::string(k_llvm_max_ptx_feature);
  plan.ptx_target = target.sm_name();
  plan.ptx_min_version = std::string(arch.min_ptx_isa);
  plan.retargeted = plan.ptx_target != plan.cpu;
  return plan;
}

std::string describe_targets(std::span<const uint32_t> sms) {
  std::string out;
  for (uint32_t sm : sms) {
    const ArchInfo* arch = find_arch(sm);
    auto add = [&](char suffix) {
      if (!out.empty()) out += ", ";
      out += "cuda:" + with_suffix(sm, suffix);
    };
    add('\0');
    if (arch && arch->has_arch_specific) add('a');
    if (arch && arch->has_family_specific) add('f');
  }
  return out;
}

std::string describe_known_targets() {
  std::vector<uint32_t> sms;
  for (const ArchInfo& a : k_archs) sms.push_back(a.sm);
  return describe_targets(sms) + ", " + describe_known_amd_targets();
}

namespace {

Result<Target> parse_amd_target(std::string_view text, std::string_view processor) {
  if (!find_amd_arch(processor))
    return make_error(ErrorCode::invalid_argument, "unknown target '" + std::string(text) +
                                                       "'; known AMD targets: " + describe_known_amd_targets());
  Target target;
  target.vendor = Vendor::amd;
  target.processor = std::string(processor);
  return target;
}

}  // namespace

Result<Target> parse_target(std::string_view text) {
  std::string_view rest = text;
  if (rest.starts_with("hip:")) return parse_amd_target(text, rest.substr(4));
  if (rest.starts_with("gfx")) return parse_amd_target(text, rest);
  if (rest.starts_with("cuda:")) {
    rest.remove_prefix(5);
  } else if (rest.starts_with("sm_")) {
    rest.remove_prefix(3);
  } else {
    return make_error(ErrorCode::invalid_argument,
                      "target '" + std::string(text) + "' is not of the form cuda:<sm>[a|f] (e.g. cuda:90) or hip:<gfx> (e.g. hip:gfx90a); known targets: " +
                          describe_known_targets());
  }
  uint32_t sm = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), sm);
  std::string_view suffix_text(end, rest.data() + rest.size() - end);
  if (ec != std::errc{} || suffix_text.size() > 1 || (suffix_text.size() == 1 && suffix_text != "a" && suffix_text != "f")) {
    return make_error(ErrorCode::invalid_argument, "target '" + std::string(text) +
                                                       "' is malformed; expected cuda:<sm>[a|f]; known targets: " +
                                                       describe_known_targets());
  }
  const ArchInfo* arch = find_arch(sm);
  if (!arch) {
    return make_error(ErrorCode::invalid_argument,
                      "unknown target '" + std::string(text) + "'; known targets: " + describe_known_targets());
  }
  Target target{Vendor::nvidia, sm, suffix_text.empty() ? '\0' : suffix_text[0], {}};
  if ((target.suffix == 'a' && !arch->has_arch_specific) || (target.suffix == 'f' && !arch->has_family_specific)) {
    return make_error(ErrorCode::invalid_argument, "target '" + std::string(text) + "': sm_" + std::to_string(sm) +
                                                       " has no '" + std::string(1, target.suffix) +
                                                       "' variant; known targets: " + describe_known_targets());
  }
  return target;
}

std::string TargetRange::describe() const {
  return "sm_" + std::to_string(min_sm) + "..sm_" + std::to_string(max_sm);
}

}  // namespace kjit
