// The client's cache counters against the wire: every counter field of
// kjit.v1.TierStats, BlobStats and StatsResponse is one counter of the
// client's structs (for_each_counter, kjit/client.h) and back, each arrives
// under its name, and `kjit cache stats` prints what it printed before.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "client/cache_stats_wire.h"
#include "client/cli/cache_stats_output.h"
#include "convert/counter_fields.h"
#include "kjit/client.h"
#include "kjit/v1/cache.pb.h"

namespace kjit {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

template <typename Counters>
std::multiset<std::string> counter_names(const Counters& counters) {
  std::multiset<std::string> out;
  for_each_counter(counters, [&out](std::string_view name, const auto&) { out.insert(std::string(name)); });
  return out;
}

template <typename Counters>
std::map<std::string, double> values_of(const Counters& counters) {
  std::map<std::string, double> out;
  for_each_counter(counters, [&out](std::string_view name, const auto& value) { out[std::string(name)] = double(value); });
  return out;
}

TEST(ClientCacheStats, EveryCounterFieldIsOneClientCounterAndBack) {
  EXPECT_EQ(counter_names(CacheTierStats{}), counter_field_names(*v1::TierStats::descriptor()));
  EXPECT_EQ(counter_names(CacheBlobStats{}), counter_field_names(*v1::BlobStats::descriptor()));
  EXPECT_EQ(counter_names(CacheStats{}), counter_field_names(*v1::StatsResponse::descriptor()));
}

// Distinct values into every counter field of the wire, by reflection: each
// must arrive in the client's counter of the same name.
void fill(google::protobuf::Message& message, double& next) {
  const Descriptor* descriptor = message.GetDescriptor();
  const google::protobuf::Reflection* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated()) continue;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) reflection->SetUInt64(&message, field, uint64_t(++next));
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) reflection->SetDouble(&message, field, ++next + 0.5);
  }
}

template <typename Counters>
void expect_arrived(const google::protobuf::Message& sent, const Counters& read) {
  std::map<std::string, double> from_wire;
  for (const std::string& name : counter_field_names(*sent.GetDescriptor())) {
    const FieldDescriptor* field = sent.GetDescriptor()->FindFieldByName(name);
    from_wire[name] = field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE
                          ? sent.GetReflection()->GetDouble(sent, field)
                          : double(sent.GetReflection()->GetUInt64(sent, field));
  }
  EXPECT_EQ(values_of(read), from_wire) << sent.GetDescriptor()->name();
}

TEST(ClientCacheStats, EachCounterArrivesUnderItsName) {
  double next = 0;
  v1::StatsResponse wire;
  for (const char* tier : {"memory", "disk"}) {
    v1::TierStats& t = *wire.add_tiers();
    t.set_tier(tier);
    fill(t, next);
  }
  fill(wire, next);
  fill(*wire.mutable_blobs(), next);
  const CacheStats stats = to_cache_stats(wire);
  ASSERT_EQ(stats.tiers.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(stats.tiers[i].tier, wire.tiers(i).tier());
    expect_arrived(wire.tiers(i), stats.tiers[i]);
  }
  expect_arrived(wire, stats);
  expect_arrived(wire.blobs(), stats.blobs);
}

CacheStats sample() {
  CacheStats s;
  s.tiers = {{"memory", 101, 2, 3, 123456789, 5, 6, 7, 8, 9, 10}, {"disk", 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}};
  s.lookups = 21;
  s.misses = 22;
  s.compiles = 23;
  s.joined = 24;
  s.fleet_waits = 25;
  s.lease_timeouts = 26;
  s.compile_ms_saved = 2712.5;
  s.blobs = {31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 4300, 44, 45, 46};
  return s;
}

// What `kjit cache stats` printed when each line was written by hand.
TEST(ClientCacheStats, TheCliPrintsWhatItPrintedBefore) {
  EXPECT_EQ(cli::cache_stats_json(sample()),
            R"({"blobs":{"claim_hits":41,"claim_timeouts":44,"claim_wait_ms":4300,"claim_waits":42,"claims":40,)"
            R"("claims_abandoned":45,"claims_refused":46,"gets":33,"group_gets":37,"group_hits":38,"groups_put":36,)"
            R"("hits":34,"misses":35,"put_bytes":32,"put_conflicts":39,"puts":31},"compile_ms_saved":2712.5,"compiles":23,"fleet_waits":25,"joined":24,)"
            R"("lease_timeouts":26,"lookups":21,"misses":22,"namespace_only":false,"namespaces":[],)"
            R"("pch":{"bytes":0,"creations":0,"evictions":0,"fallbacks":0,"firsts":0,"hits":0},"tiers":[{"answered":10,"bytes":123456789,)"
            R"("corruptions":7,"entries":5,"errors":8,"evictions":6,"hits":101,"misses":2,"puts":3,"skipped":9,)"
            R"("tier":"memory"},{"answered":20,"bytes":14,"corruptions":17,"entries":15,"errors":18,"evictions":16,)"
            R"("hits":11,"misses":12,"puts":13,"skipped":19,"tier":"disk"}]})");
  EXPECT_EQ(cli::cache_stats_text(sample()),
            "tier         hits    misses     puts        bytes   entries evictions corruptions  errors\n"
            "memory        101         2        3    123456789         5         6           7      17\n"
            "disk           11        12       13           14        15        16          17      37\n"
            "lookups 21, misses 22, compiles 23 (joined 24, waited on other daemons 25), compile time saved 2.7 s\n"
            "client blobs: puts 31 (32 bytes), gets 33 (hits 34, misses 35), groups put 36, group gets 37 (whole 38), "
            "put_conflicts 39\n"
            "claims on blob groups: granted 40, answered with the group 41, waits 42 (4.3 s), timed out 44, "
            "abandoned 45, refused 46\n");
  EXPECT_EQ(cli::cache_stats_json(CacheStats{}),
            R"({"blobs":{"claim_hits":0,"claim_timeouts":0,"claim_wait_ms":0,"claim_waits":0,"claims":0,)"
            R"("claims_abandoned":0,"claims_refused":0,"gets":0,"group_gets":0,"group_hits":0,"groups_put":0,"hits":0,)"
            R"("misses":0,"put_bytes":0,"put_conflicts":0,"puts":0},"compile_ms_saved":0.0,"compiles":0,"fleet_waits":0,"joined":0,"lease_timeouts":0,)"
            R"("lookups":0,"misses":0,"namespace_only":false,"namespaces":[],)"
            R"("pch":{"bytes":0,"creations":0,"evictions":0,"fallbacks":0,"firsts":0,"hits":0},"tiers":[]})");
  EXPECT_EQ(cli::cache_stats_text(CacheStats{}),
            "tier         hits    misses     puts        bytes   entries evictions corruptions  errors\n"
            "lookups 0, misses 0, compiles 0 (joined 0, waited on other daemons 0), compile time saved 0.0 s\n"
            "client blobs: puts 0 (0 bytes), gets 0 (hits 0, misses 0), groups put 0, group gets 0 (whole 0), "
            "put_conflicts 0\n"
            "claims on blob groups: granted 0, answered with the group 0, waits 0 (0.0 s), timed out 0, abandoned 0, "
            "refused 0\n");
}

// The compile workers' precompiled headers on a line of their own, once
// there are any, and never in a tenant's answer.
TEST(ClientCacheStats, TheCliPrintsTheWorkersPrecompiledHeaders) {
  CacheStats stats;
  stats.pch = {5, 2, 1, 0, 2, 3u << 20};
  const std::string text = cli::cache_stats_text(stats);
  EXPECT_NE(text.find("precompiled headers (compile workers): hits 5, written 2, fallbacks 1, evicted 0, "
                      "header sets new to a worker 2, kept 3.0 MiB\n"),
            std::string::npos)
      << text;
  stats.namespace_only = true;
  EXPECT_EQ(cli::cache_stats_text(stats).find("precompiled headers"), std::string::npos);
  EXPECT_EQ(cli::cache_stats_json(stats).find("\"pch\""), std::string::npos);
}

// Each namespace on a line after the daemon's figures; a tenant's answer
// says that the figures are its namespace's alone.
TEST(ClientCacheStats, TheCliPrintsEachNamespace) {
  CacheStats stats;
  CacheNamespaceStats team;
  team.ns = "team-a";
  team.lookups = 7;
  team.memory_hits = 4;
  team.disk_hits = 1;
  team.compiles = 2;
  team.memory_bytes = 3 << 20;
  team.disk_bytes = 1 << 20;
  team.memory_evictions = 5;
  team.max_bytes = 4 << 20;
  stats.namespaces = {CacheNamespaceStats{}, team};
  const std::string text = cli::cache_stats_text(stats);
  EXPECT_NE(text.find("namespace              lookups      hits  compiles        memory          disk  evictions         share\n"
                      "(default)                    0         0         0       0.0 MiB       0.0 MiB          0          none\n"
                      "team-a                       7         5         2       3.0 MiB       1.0 MiB          5       4.0 MiB\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("alone"), std::string::npos);
  stats.namespace_only = true;
  EXPECT_NE(cli::cache_stats_text(stats).find("the figures above are your namespace's alone\n"), std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(cli::cache_stats_json(stats));
  EXPECT_EQ(json.at("namespaces").at(1).at("namespace"), "team-a");
  EXPECT_EQ(json.at("namespaces").at(1).at("max_bytes"), 4 << 20);
}

// --json carries every counter under its name, from the same table.
TEST(ClientCacheStats, TheJsonCarriesEveryCounter) {
  const CacheStats stats = sample();
  const nlohmann::json json = nlohmann::json::parse(cli::cache_stats_json(stats));
  for (const auto& [name, value] : values_of(stats)) EXPECT_EQ(json.at(name).get<double>(), value) << name;
  for (const auto& [name, value] : values_of(stats.blobs)) EXPECT_EQ(json.at("blobs").at(name).get<double>(), value) << name;
  ASSERT_EQ(json.at("tiers").size(), stats.tiers.size());
  for (size_t i = 0; i < stats.tiers.size(); ++i)
    for (const auto& [name, value] : values_of(stats.tiers[i]))
      EXPECT_EQ(json.at("tiers").at(i).at(name).get<double>(), value) << name;
}

}  // namespace
}  // namespace kjit
