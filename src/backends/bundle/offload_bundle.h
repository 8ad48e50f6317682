// Clang offload bundles: several AMD code objects (one per gfx target) in one
// file, as clang's HIP driver writes them and hipModuleLoadData accepts them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"

namespace kjit {

// One code object and the id it is filed under: "hipv4-amdgcn-amd-amdhsa--gfx90a".
struct BundleEntry {
  std::string id;
  std::string bytes;
};

// The empty host entry clang 19's HIP driver puts first (it passes
// "host-x86_64-unknown-linux", which the bundler writes with two dashes).
// HIP's runtime skips it; it is there so the file reads like clang's own.
inline constexpr std::string_view k_host_bundle_id = "host-x86_64-unknown-linux--";

// Where each entry's bytes start: clang's HIP driver asks the bundler for
// -bundle-align=4096, so code objects start on page boundaries.
inline constexpr size_t k_bundle_alignment = 4096;

// The id HIP's runtime looks for: "hipv4-" (code object v4 and later) + the
// code object's target id ("amdgcn-amd-amdhsa--gfx90a[:features]").
std::string hip_bundle_id(std::string_view target_id);

// An uncompressed clang offload bundle: the empty host entry first, then
// `entries` in their order, each aligned to k_bundle_alignment. No entries,
// an empty id, an id given twice, or the host's id are invalid_argument.
Result<std::string> write_offload_bundle(const std::vector<BundleEntry>& entries);

// The entries of an uncompressed bundle, in file order, host entry included.
// Anything malformed (bad magic, truncation, an entry outside the file,
// duplicate ids, a compressed bundle) is invalid_argument; never throws.
// Safe to call from any thread.
Result<std::vector<BundleEntry>> read_offload_bundle(std::string_view bytes);

}  // namespace kjit
