// The daemon's cache counters against the wire: every counter field of
// kjit.v1.TierStats, BlobStats and StatsResponse is exactly one daemon
// counter (for_each_counter, in cache/) and back, and a counter goes from the
// daemon's structs through the wire to the client's under its own name.
#include "server/edge/stats_translation.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "client/cache_stats_wire.h"
#include "convert/counter_fields.h"
#include "kjit/client.h"

namespace kjit {
namespace {

template <typename... Counters>
std::multiset<std::string> counter_names(const Counters&... counters) {
  std::multiset<std::string> out;
  (for_each_counter(counters, [&out](std::string_view name, const auto&) { out.insert(std::string(name)); }), ...);
  return out;
}

template <typename... Counters>
std::map<std::string, double> values_of(const Counters&... counters) {
  std::map<std::string, double> out;
  (for_each_counter(counters, [&out](std::string_view name, const auto& value) { out[std::string(name)] = double(value); }),
   ...);
  return out;
}

TEST(StatsTranslation, EveryCounterFieldIsOneDaemonCounterAndBack) {
  EXPECT_EQ(counter_names(TierStats{}), counter_field_names(*v1::TierStats::descriptor()));
  EXPECT_EQ(counter_names(BlobStats{}), counter_field_names(*v1::BlobStats::descriptor()));
  EXPECT_EQ(counter_names(TieredCacheStats{}, CoalescerStats{}), counter_field_names(*v1::StatsResponse::descriptor()));
}

TEST(StatsTranslation, EachCounterGoesFromDaemonToClientUnderItsName) {
  uint64_t next = 0;
  auto fill = [&next](std::string_view, auto& counter) { counter = ++next; };
  TieredCacheStats cache;
  for (CacheTier tier : {CacheTier::memory, CacheTier::disk}) {
    TierStats& t = cache.tiers.emplace_back(TierStats{tier, {}, 0, 0});
    for_each_counter(t.store, fill);
    t.answered = ++next;  // failures stays 0: errors is the store's own
  }
  for_each_counter(cache, fill);
  CoalescerStats coalescer;
  for_each_counter(coalescer, fill);
  BlobStats blobs;
  for_each_counter(blobs, fill);

  // Every counter was given its own value: a counter the fill above misses
  // would arrive as 0 and prove nothing.
  const std::map<std::string, double> sent_tiers[2] = {values_of(cache.tiers[0]), values_of(cache.tiers[1])};
  const std::map<std::string, double> sent = values_of(cache, coalescer);
  const std::map<std::string, double> sent_blobs = values_of(blobs);
  std::set<double> distinct;
  size_t count = 0;
  for (const auto* values : {&sent_tiers[0], &sent_tiers[1], &sent, &sent_blobs})
    for (const auto& [name, value] : *values) {
      EXPECT_NE(value, 0) << name;
      distinct.insert(value);
      ++count;
    }
  EXPECT_EQ(distinct.size(), count);

  const v1::StatsResponse wire = to_stats_response(cache, coalescer, blobs);
  ASSERT_EQ(wire.tiers_size(), 2);
  EXPECT_EQ(wire.tiers(0).tier(), "memory");
  EXPECT_EQ(wire.tiers(1).tier(), "disk");
  const CacheStats client = to_cache_stats(wire);
  ASSERT_EQ(client.tiers.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(client.tiers[i].tier, wire.tiers(i).tier());
    EXPECT_EQ(values_of(client.tiers[i]), sent_tiers[i]) << "tier " << i;
  }
  EXPECT_EQ(values_of(client), sent);
  EXPECT_EQ(values_of(client.blobs), sent_blobs);
}

// The wire's errors are a tier's failed operations: the store's own count or
// the failures the cache above it counted, whichever is larger.
TEST(StatsTranslation, ATiersErrorsAreItsFailedOperations) {
  TieredCacheStats cache;
  TierStats disk{CacheTier::disk, {}, 0, 5};
  disk.store.errors = 2;
  cache.tiers.push_back(disk);
  EXPECT_EQ(to_stats_response(cache, {}, {}).tiers(0).errors(), 5u);
  cache.tiers[0].store.errors = 7;
  EXPECT_EQ(to_stats_response(cache, {}, {}).tiers(0).errors(), 7u);
}

TEST(StatsTranslation, ACounterTheMessageLacksIsNotSet) {
  v1::BlobStats message;
  EXPECT_FALSE(set_counter(message, "no_such_counter", uint64_t{1}));
  EXPECT_TRUE(set_counter(message, "puts", uint64_t{3}));
  EXPECT_EQ(message.puts(), 3u);
}

}  // namespace
}  // namespace kjit
