// Which part of a fatbin a GPU loads. The driver takes a cubin built for the
// GPU's own major architecture at a minor version no newer than the GPU's
// (an arch-specific "a" cubin only on exactly its architecture, a
// family-specific "f" one on its family), the newest such; failing that, it
// JIT-compiles PTX for an architecture no newer than the GPU's.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "target/target.h"

namespace kjit {

struct FatbinChoice {
  Target target;  // the part's target
  bool ptx = false;
};

// `cubins`: the fatbin's cubin targets; `ptx`: its PTX target, if any.
std::optional<FatbinChoice> choose_fatbin_entry(std::span<const Target> cubins, std::optional<Target> ptx,
                                                const Target& device);

// Whether a cubin built for `built` runs on a `device` GPU.
bool cubin_runs_on(const Target& built, const Target& device);

}  // namespace kjit
