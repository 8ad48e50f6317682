// Tier order, fill-up on lower hits, failure isolation (see tiered_cache.h).
#include "cache/tiered_cache.h"

#include <spdlog/spdlog.h>

namespace kjit {
namespace {

constexpr std::array<CacheTier, k_cache_tier_count> k_tiers = {CacheTier::memory, CacheTier::disk, CacheTier::redis,
                                                              CacheTier::reapi};

}  // namespace


TieredCache::TieredCache(Tiers tiers) : TieredCache(std::move(tiers), Options()) {}

TieredCache::TieredCache(Tiers tiers, Options options) : memory_(std::move(tiers.memory)) {
  stores_[index_of(CacheTier::memory)] = memory_;
  stores_[index_of(CacheTier::disk)] = std::move(tiers.disk);
  stores_[index_of(CacheTier::redis)] = std::move(tiers.redis);
  stores_[index_of(CacheTier::reapi)] = std::move(tiers.reapi);
  // A thread only where a hit can have something to fill: a tier between
  // memory and a lower one.
  bool can_fill = false;
  for (size_t above = index_of(CacheTier::disk); above < k_cache_tier_count; ++above)
    for (size_t below = above + 1; below < k_cache_tier_count; ++below)
      can_fill = can_fill || (stores_[above] && stores_[below]);
  if (options.fill_behind && can_fill) fills_ = std::make_unique<WriteBehindQueue>(options.max_fill_bytes);
}

TieredCache::~TieredCache() {
  fills_.reset();  // the queued fills, while the stores and counters they use are here
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
    if (memory_) memory_->insert(entry, /*keep_stored=*/true);
    fill_above(entry, i);
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

void TieredCache::fill_above(std::shared_ptr<const CacheEntry> entry, size_t from) {
  bool any_above = false;  // besides memory
  for (size_t i = index_of(CacheTier::disk); i < from; ++i) any_above = any_above || stores_[i];
  if (!any_above) return;
  if (!fills_) {
    fill_now(*entry, from);
    return;
  }
  const uint64_t bytes = MemoryStore::footprint(*entry);
  if (fills_->push(bytes, [this, entry, from] { fill_now(*entry, from); })) return;
  // Dropped: the tiers above miss this entry until another hit or a put
  // brings it, and the answer is the same.
  uint64_t dropped = 0;
  for (size_t i = index_of(CacheTier::disk); i < from; ++i)
    if (stores_[i]) dropped = ++counters_[i].fills_dropped;
  if ((dropped & (dropped - 1)) == 0)
    spdlog::warn("cache: the queue of fills behind answers is full; a {} hit was not copied above ({} dropped so far)",
                 to_string(k_tiers[from]), dropped);
}

void TieredCache::fill_now(const CacheEntry& entry, size_t from) {
  for (size_t i = index_of(CacheTier::disk); i < from; ++i) {
    Store* store = stores_[i].get();
    if (!store) continue;
    // The copy may be older than what a put stored here since the hit (a
    // replaced blob): what the tier holds stays. A failed look is no answer;
    // the put below says whether the tier works.
    if (Result<bool> held = store->contains(entry.key); held && *held) continue;
    if (Status stored = store->put(entry); !stored) note_failure(k_tiers[i], "fill", stored.error());
  }
}

void TieredCache::flush_fills() {
  if (fills_) fills_->flush();
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
    out.tiers.push_back(TierStats{k_tiers[i], stores_[i]->stats(), counters_[i].answered, counters_[i].failures,
                                  counters_[i].fills_dropped});
  }
  out.misses = misses_;
  out.lookups = out.misses;
  for (const TierStats& t : out.tiers) out.lookups += t.answered;
  out.compile_ms_saved = static_cast<double>(compile_us_saved_.load()) / 1000.0;
  return out;
}

}  // namespace kjit
