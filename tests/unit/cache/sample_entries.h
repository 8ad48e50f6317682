// Cache entries for tests: realistic metadata, payloads whose content can be
// checked against the key and version they were made for.
#pragma once

#include <string>

#include "cache/cache_entry.h"

namespace kjit::test {

// A valid 64-hex-digit key, distinct for each i.
std::string key_for(int i);

// An entry with two kernels, lowered names, timings, key components and notes.
CacheEntry make_entry(const std::string& key, std::string payload);

// Deterministic payload for (key, writer, sequence, size): a reader can tell
// whether the bytes it got are exactly one writer's version.
std::string versioned_payload(const std::string& key, int writer, int sequence, size_t size);

// An entry whose log names its writer, sequence and size, so that
// entry_is_consistent can recompute the payload it must carry.
CacheEntry make_versioned_entry(const std::string& key, int writer, int sequence, size_t size);
bool entry_is_consistent(const CacheEntry& entry, const std::string& expected_key);

// Compares every field (gtest expectations).
void expect_same_entry(const CacheEntry& actual, const CacheEntry& expected);

}  // namespace kjit::test
