// Tier order, fill-up on lower hits, failure isolation (see tiered_cache.h).
#include "cache/tiered_cache.h"

#include <spdlog/spdlog.h>

namespace kjit {
namespace {

constexpr std::array<CacheTier, k_cache_tier_count> k_tiers = {CacheTier::memory, CacheTier::disk, CacheTier::redis,
                                                              CacheTier::reapi};

}  // namespace


TieredCache::TieredCache(Tiers tiers) : memory_(std::move(tiers.memory)) {
  stores_[index_of(CacheTier::memory)] = memory_;
  stores_[index_of(CacheTier::disk)] = std::move(tiers.disk);
  stores_[index_of(CacheTier::redis)] = std::move(tiers.redis);
  stores_[index_of(CacheTier::reapi)] = std::move(tiers.reapi);
}

Store* TieredCache::tier(CacheTier tier) const {
  return stores_[index_of(tier)].get();
}

TieredCache::Tiers TieredCache::shared_tiers() const {
  return Tiers{memory_, stores_[index_of(CacheTier::disk)], stores_[index_of(CacheTier::redis)],
               stores_[index_of(CacheTier::reapi)]};
}

void TieredCache::note_failure(CacheTier tier, std::string_view operation, const Error& error) {
  const uint64_t n = ++counters_[index_of(tier)].failures;
  // A tier that is down fails every request; logging the 1st, 2nd, 4th, 8th…
  // failure keeps the log readable while still showing that it goes on.
  if ((n & (n - 1)) == 0)
    spdlog::warn("cache: {} tier {} failed ({} failure(s) so far), skipped: {}", to_string(tier), operation, n,
                 error.message);
}

std::optional<CacheHit> TieredCache::get(std::string_view key) {
  std::optional<CacheHit> hit;
  if (memory_) {
    if (std::shared_ptr<const CacheEntry> entry = memory_->find(key))
      hit = CacheHit{std::move(entry), CacheTier::memory};
  }
  for (size_t i = index_of(CacheTier::disk); !hit && i < k_cache_tier_count; ++i) {
    Store* store = stores_[i].get();
    if (!store) continue;
    Result<std::optional<CacheEntry>> found = store->get(key);
    if (!found) {
      note_failure(k_tiers[i], "get", found.error());
      continue;
    }
    if (!found->has_value()) continue;
    auto entry = std::make_shared<const CacheEntry>(std::move(**found));
    // Fill the tiers above, so the next request stops higher up. Memory
    // keeps what it holds by now: a put of other bytes under this key (a
    // replaced blob) may have landed there since this tier was read.
    put_below_memory(*entry, i);
    if (memory_) memory_->insert(entry, /*keep_stored=*/true);
    hit = CacheHit{std::move(entry), k_tiers[i]};
  }
  if (!hit) {
    ++misses_;
    return std::nullopt;
  }
  count_hit(*hit);
  return hit;
}

std::optional<CacheHit> TieredCache::get_from_memory(std::string_view key) {
  if (!memory_) return std::nullopt;
  std::shared_ptr<const CacheEntry> entry = memory_->find_if_present(key);
  if (!entry) return std::nullopt;
  CacheHit hit{std::move(entry), CacheTier::memory};
  count_hit(hit);
  return hit;
}

void TieredCache::count_hit(const CacheHit& hit) {
  ++counters_[index_of(hit.tier)].answered;
  compile_us_saved_ += static_cast<int64_t>(hit.entry->compile_ms * 1000);
}

void TieredCache::put_below_memory(const CacheEntry& entry, size_t up_to_tier) {
  for (size_t i = index_of(CacheTier::disk); i < up_to_tier; ++i) {
    if (!stores_[i]) continue;
    if (Status stored = stores_[i]->put(entry); !stored) note_failure(k_tiers[i], "put", stored.error());
  }
}

std::shared_ptr<const CacheEntry> TieredCache::put(CacheEntry entry) {
  auto shared = std::make_shared<const CacheEntry>(std::move(entry));
  if (memory_) memory_->insert(shared);
  put_below_memory(*shared, k_cache_tier_count);
  return shared;
}

std::shared_ptr<const CacheEntry> TieredCache::peek_memory(std::string_view key) const {
  return memory_ ? memory_->peek(key) : nullptr;
}

void TieredCache::remove(std::string_view key) {
  for (size_t i = 0; i < k_cache_tier_count; ++i) {
    if (!stores_[i]) continue;
    if (Status removed = stores_[i]->remove(key); !removed) note_failure(k_tiers[i], "remove", removed.error());
  }
}

TieredCacheStats TieredCache::stats() const {
  TieredCacheStats out;
  for (size_t i = 0; i < k_cache_tier_count; ++i) {
    if (!stores_[i]) continue;
    out.tiers.push_back(TierStats{k_tiers[i], stores_[i]->stats(), counters_[i].answered, counters_[i].failures});
  }
  out.misses = misses_;
  out.lookups = out.misses;
  for (const TierStats& t : out.tiers) out.lookups += t.answered;
  out.compile_ms_saved = static_cast<double>(compile_us_saved_.load()) / 1000.0;
  return out;
}

}  // namespace kjit
