// How a client blob is spelled in the cache tiers: its cache key, derived
// from (kind, namespace, key, name), and a group's payload (its members'
// names). The daemon stores blobs so; a direct reader on the daemon's host
// (LocalCache, the Python client) finds them so. Versioned by its domain:
// a change of spelling can never read an old entry as new.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit {

inline constexpr std::string_view k_blob_kind = "client-blob";
inline constexpr std::string_view k_blob_group_kind = "client-blob-group";
inline constexpr std::string_view k_blob_key_suffix = "-blob";
// What blob keys hash before their fields; published to direct readers
// (the daemon's direct-read manifest), which derive the same keys.
inline constexpr std::string_view k_blob_key_domain = "kjit client blob key v1";

// The cache key of a blob (kind k_blob_kind) or a group (k_blob_group_kind):
// the domain, then each field length-prefixed, SHA-256 in hex, "-blob".
std::string blob_cache_key(std::string_view kind, std::string_view ns, std::string_view key, std::string_view name);

// Whether text is spelled as blob_cache_key spells keys.
bool is_blob_cache_key(std::string_view text);

// A group's payload: its member names, one a line (names have no control
// characters, so the spelling is unambiguous), and back.
std::string encode_blob_group_names(const std::vector<std::string>& names);
std::vector<std::string> decode_blob_group_names(std::string_view bytes);

}  // namespace kjit
