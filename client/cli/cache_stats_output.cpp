#include "client/cli/cache_stats_output.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

namespace kjit::cli {
namespace {

template <typename Counters>
nlohmann::json counters_json(const Counters& counters, nlohmann::json out = nlohmann::json::object()) {
  for_each_counter(counters, [&out](std::string_view name, const auto& value) { out[std::string(name)] = value; });
  return out;
}

template <typename... Args>
std::string format(const char* spec, Args... args) {
  const int size = std::snprintf(nullptr, 0, spec, args...);
  std::string out(static_cast<size_t>(std::max(size, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, spec, args...);
  return out;
}

using Names = std::vector<std::string_view>;

bool names(const Names& list, std::string_view name) { return std::find(list.begin(), list.end(), name) != list.end(); }

std::string number(uint64_t value) { return format("%llu", static_cast<unsigned long long>(value)); }
std::string number(double value) { return format("%.1f", value); }

// ", name value" for each counter that a line's own words leave out (those
// in `shown` or `left_out`): how a counter new to the wire reaches the text.
template <typename Counters>
std::string the_rest(const Counters& counters, const Names& shown, const Names& left_out) {
  std::string out;
  for_each_counter(counters, [&](std::string_view name, const auto& value) {
    if (!names(shown, name) && !names(left_out, name)) out += ", " + std::string(name) + " " + number(value);
  });
  return out;
}

// A column of the tier table: the sum of its counters.
struct Column {
  std::string_view header;
  int width;
  Names counters;
};

// The tier table's columns; a tier counter not named here nor in
// k_tier_left_out gets a column of its own, after these.
const std::vector<Column> k_tier_columns = {
    {"hits", 9, {"hits"}},
    {"misses", 9, {"misses"}},
    {"puts", 8, {"puts"}},
    {"bytes", 12, {"bytes"}},
    {"entries", 9, {"entries"}},
    {"evictions", 9, {"evictions"}},
    {"corruptions", 11, {"corruptions"}},
    {"errors", 7, {"errors", "skipped"}},  // skipped: lost like a failure, only not tried
};
// Left to --json: the lookups line counts what the tiers answered.
const Names k_tier_left_out = {"answered"};

std::vector<Column> tier_columns() {
  std::vector<Column> columns = k_tier_columns;
  const CacheTierStats any;
  for_each_counter(any, [&columns](std::string_view name, const auto&) {
    const bool placed = names(k_tier_left_out, name) ||
                        std::any_of(columns.begin(), columns.end(), [name](const Column& c) { return names(c.counters, name); });
    if (!placed) columns.push_back({name, std::max(9, static_cast<int>(name.size())), {name}});
  });
  return columns;
}

std::string tier_table(const std::vector<CacheTierStats>& tiers) {
  const std::vector<Column> columns = tier_columns();
  std::string out = format("%-7s", "tier");
  for (const Column& c : columns) out += format(" %*.*s", c.width, static_cast<int>(c.header.size()), c.header.data());
  out += "\n";
  for (const CacheTierStats& t : tiers) {
    out += format("%-7s", t.tier.c_str());
    for (const Column& c : columns) {
      uint64_t sum = 0;
      for_each_counter(t, [&](std::string_view name, const auto& value) {
        if (names(c.counters, name)) sum += static_cast<uint64_t>(value);
      });
      out += format(" %*llu", c.width, static_cast<unsigned long long>(sum));
    }
    out += "\n";
  }
  return out;
}

std::string megabytes(uint64_t bytes) { return format("%.1f MiB", static_cast<double>(bytes) / (1 << 20)); }

// Each namespace on a line (a tenant sees its own alone), its share last.
std::string namespace_table(const CacheStats& stats) {
  if (stats.namespaces.empty()) return {};
  std::string out = stats.namespace_only ? "the figures above are your namespace's alone\n" : "";
  out += format("%-20s %9s %9s %9s %13s %13s %10s %13s\n", "namespace", "lookups", "hits", "compiles", "memory",
                "disk", "evictions", "share");
  for (const CacheNamespaceStats& ns : stats.namespaces) {
    out += format("%-20s %9llu %9llu %9llu %13s %13s %10llu %13s\n", ns.ns.empty() ? "(default)" : ns.ns.c_str(),
                  static_cast<unsigned long long>(ns.lookups),
                  static_cast<unsigned long long>(ns.memory_hits + ns.disk_hits + ns.redis_hits + ns.reapi_hits),
                  static_cast<unsigned long long>(ns.compiles), megabytes(ns.memory_bytes).c_str(),
                  megabytes(ns.disk_bytes).c_str(),
                  static_cast<unsigned long long>(ns.memory_evictions + ns.disk_evictions),
                  ns.max_bytes ? megabytes(ns.max_bytes).c_str() : "none");
  }
  return out;
}

}  // namespace

std::string cache_stats_json(const CacheStats& stats) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const CacheTierStats& t : stats.tiers) tiers.push_back(counters_json(t, {{"tier", t.tier}}));
  nlohmann::json out = counters_json(stats);
  out["tiers"] = std::move(tiers);
  out["blobs"] = counters_json(stats.blobs);
  nlohmann::json namespaces = nlohmann::json::array();
  for (const CacheNamespaceStats& ns : stats.namespaces) namespaces.push_back(counters_json(ns, {{"namespace", ns.ns}}));
  out["namespaces"] = std::move(namespaces);
  out["namespace_only"] = stats.namespace_only;
  if (!stats.namespace_only) out["pch"] = counters_json(stats.pch);
  return out.dump();
}

std::string cache_stats_text(const CacheStats& stats) {
  std::string out = tier_table(stats.tiers);
  out += format("lookups %llu, misses %llu, compiles %llu (joined %llu, waited on other daemons %llu), compile time "
                "saved %.1f s",
                static_cast<unsigned long long>(stats.lookups), static_cast<unsigned long long>(stats.misses),
                static_cast<unsigned long long>(stats.compiles), static_cast<unsigned long long>(stats.joined),
                static_cast<unsigned long long>(stats.fleet_waits), stats.compile_ms_saved / 1000);
  out += the_rest(stats, {"lookups", "misses", "compiles", "joined", "fleet_waits", "compile_ms_saved"},
                  {"lease_timeouts"});  // left to --json
  out += "\n";
  const CacheBlobStats& b = stats.blobs;
  out += format("client blobs: puts %llu (%llu bytes), gets %llu (hits %llu, misses %llu), groups put %llu, "
                "group gets %llu (whole %llu)",
                static_cast<unsigned long long>(b.puts), static_cast<unsigned long long>(b.put_bytes),
                static_cast<unsigned long long>(b.gets), static_cast<unsigned long long>(b.hits),
                static_cast<unsigned long long>(b.misses), static_cast<unsigned long long>(b.groups_put),
                static_cast<unsigned long long>(b.group_gets), static_cast<unsigned long long>(b.group_hits));
  // Claims (one compile per group for clients compiling themselves) on a line of their own.
  const Names claims = {"claims", "claim_hits", "claim_waits", "claim_wait_ms", "claim_timeouts", "claims_abandoned",
                        "claims_refused"};
  const Names shown = {"puts", "put_bytes", "gets", "hits", "misses", "groups_put", "group_gets", "group_hits"};
  out += the_rest(b, shown, claims);
  out += "\n";
  out += format("claims on blob groups: granted %llu, answered with the group %llu, waits %llu (%.1f s), "
                "timed out %llu, abandoned %llu, refused %llu\n",
                static_cast<unsigned long long>(b.claims), static_cast<unsigned long long>(b.claim_hits),
                static_cast<unsigned long long>(b.claim_waits), b.claim_wait_ms / 1000.0,
                static_cast<unsigned long long>(b.claim_timeouts), static_cast<unsigned long long>(b.claims_abandoned),
                static_cast<unsigned long long>(b.claims_refused));
  // The workers' PCHs, the operator's answer alone, once there are any.
  bool any_pch = false;
  for_each_counter(stats.pch, [&any_pch](std::string_view, uint64_t value) { any_pch = any_pch || value != 0; });
  if (!stats.namespace_only && any_pch) {
    const CachePchStats& p = stats.pch;
    out += format("precompiled headers (compile workers): hits %llu, written %llu, fallbacks %llu, evicted %llu, "
                  "header sets new to a worker %llu, kept %s",
                  static_cast<unsigned long long>(p.hits), static_cast<unsigned long long>(p.creations),
                  static_cast<unsigned long long>(p.fallbacks), static_cast<unsigned long long>(p.evictions),
                  static_cast<unsigned long long>(p.firsts), megabytes(p.bytes).c_str());
    out += the_rest(p, {"hits", "creations", "fallbacks", "evictions", "firsts", "bytes"}, {});
    out += "\n";
  }
  out += namespace_table(stats);
  return out;
}

}  // namespace kjit::cli
