// How a bounded tier (memory, disk) divides its bound among the owners of
// its entries: the daemon's cache namespaces, though keys stay opaque here
// (the daemon says whose a key is). An owner with a share keeps at most that
// many bytes in the tier, and is never evicted for another owner while it is
// within its share; owners without a share are bounded by the tier alone,
// and are the first to go, least recently used first, when the tier is full.
// A tier full of owners within their shares (shares summing past its bound)
// makes room from the putting owner's own entries.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kjit {

// The owner of a stored key, fixed when the tier is opened: one key always
// has one owner. Null: every entry is the one owner "".
using OwnerOf = std::function<std::string(std::string_view key)>;

// Each owner's share of the tier, in bytes; replaceable while the tier
// serves (a reload of the tenants).
struct StoreShares {
  std::map<std::string, uint64_t, std::less<>> max_bytes;

  std::optional<uint64_t> share_of(std::string_view owner) const {
    auto found = max_bytes.find(owner);
    return found == max_bytes.end() ? std::nullopt : std::optional(found->second);
  }
};

// What one owner holds in a tier now, and how many of its entries the tier
// evicted since it was opened.
struct OwnerUsage {
  uint64_t bytes = 0;
  uint64_t entries = 0;
  uint64_t evictions = 0;
};

}  // namespace kjit
