#include "target/fatbin_choice.h"

namespace kjit {
namespace {

// sm_90 -> 9, sm_100 -> 10, sm_121 -> 12: the architecture's major version.
uint32_t major_of(uint32_t sm) { return sm / 10; }

}  // namespace

bool cubin_runs_on(const Target& built, const Target& device) {
  if (built.suffix == 'a') return built.sm == device.sm;
  return major_of(built.sm) == major_of(device.sm) && built.sm <= device.sm;
}

std::optional<FatbinChoice> choose_fatbin_entry(std::span<const Target> cubins, std::optional<Target> ptx,
                                                const Target& device) {
  std::optional<Target> best;
  for (const Target& cubin : cubins) {
    if (!cubin_runs_on(cubin, device)) continue;
    // The newest that runs; between equal SMs the specialised one, which the
    // driver prefers on the architecture it was built for.
    if (!best || cubin.sm > best->sm || (cubin.sm == best->sm && cubin.suffix && !best->suffix)) best = cubin;
  }
  if (best) return FatbinChoice{*best, false};
  if (ptx && ptx->sm <= device.sm && (ptx->suffix != 'a' || ptx->sm == device.sm)) return FatbinChoice{*ptx, true};
  return std::nullopt;
}

}  // namespace kjit
