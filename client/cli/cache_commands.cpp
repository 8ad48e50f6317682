#include "client/cli/cache_commands.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "pipeline/cache_key.h"
#include "client/cli/cache_stats_output.h"
#include "client/cli/exit_codes.h"
#include "kjit/client.h"

namespace kjit::cli {
namespace {

// "500M", "2G", "1048576".
std::optional<uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  uint64_t multiplier = 1;
  std::string digits = text;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K': multiplier = 1ull << 10; break;
    case 'M': multiplier = 1ull << 20; break;
    case 'G': multiplier = 1ull << 30; break;
    case 'T': multiplier = 1ull << 40; break;
    default: break;
  }
  if (multiplier != 1) digits.pop_back();
  try {
    size_t used = 0;
    uint64_t value = std::stoull(digits, &used);
    if (used != digits.size()) return std::nullopt;
    return value * multiplier;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Result<ExplainSide> side_of(const std::string& what, const CompileArgs& flags) {
  ExplainSide side;
  if (is_key_hex(what)) {
    side.key = what;
    return side;
  }
  CompileArgs args = flags;
  args.file = what;
  Result<CompileRequest> request = build_compile_request(args);
  if (!request) return request.error();
  side.request = std::move(request.value());
  return side;
}


int print_stats(const CacheStats& stats, bool json) {
  if (json)
    std::cout << cache_stats_json(stats) << std::endl;
  else
    std::cout << cache_stats_text(stats) << std::flush;
  return k_exit_ok;
}

}  // namespace

CLI::App* add_cache_command(CLI::App& app, CacheArgs& args) {
  CLI::App* cache = app.add_subcommand("cache", "inspect and maintain kjitd's compile cache");
  cache->require_subcommand(1);
  args.stats = cache->add_subcommand("stats", "hits and misses per tier, bytes, entries, evictions, corruptions");
  args.stats->add_flag("--json", args.json, "print JSON");
  args.ls = cache->add_subcommand("ls", "list the disk tier's entries, most recently used first");
  args.ls->add_option("--limit", args.limit, "at most this many");
  args.ls->add_flag("--json", args.json, "print JSON");
  args.rm = cache->add_subcommand("rm", "remove an entry from every tier");
  args.rm->add_option("key", args.key, "cache key")->required();
  args.gc = cache->add_subcommand("gc", "shrink the disk tier, least recently used first");
  args.gc->add_option("--max-size", args.max_size, "bytes to shrink to: 1048576, 500M, 2G")->required();
  args.verify = cache->add_subcommand("verify", "check every disk entry's checksum, remove the bad ones");
  args.explain = cache->add_subcommand("explain", "show two requests' key components side by side, and which differ");
  args.explain->add_option("a", args.left, "a cache key, or a kernel file")->required();
  args.explain->add_option("b", args.right, "a cache key, or a kernel file")->required();
  args.explain->add_option("--target,-t", args.compile.target, "target for file sides");
  args.explain->add_option("-D,--define", args.compile.defines, "macro for file sides");
  args.explain->add_option("-I,--include-dir", args.compile.include_dirs, "header directory for file sides");
  args.explain->add_option("--right-target", args.right_target, "target for side b only");
  args.explain->add_option("--right-define", args.right_defines, "extra macro for side b only");
  args.explain->add_flag("--json", args.json, "print JSON");
  // `kjit cache stats --socket S`: the connection options are cache's, and
  // reach it from after the command too.
  for (CLI::App* command : cache->get_subcommands({})) command->fallthrough();
  return cache;
}

int run_cache(const CacheArgs& args, const Connection& connection) {
  Client client = connection.client();
  if (*args.stats) {
    Result<CacheStats> stats = client.cache_stats();
    if (!stats) return report_error(stats.error(), connection.target);
    return print_stats(*stats, args.json);
  }
  if (*args.ls) {
    Result<std::vector<CacheListing>> entries = client.cache_list(args.limit);
    if (!entries) return report_error(entries.error(), connection.target);
    if (args.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const CacheListing& e : *entries) out.push_back({{"key", e.key}, {"bytes", e.bytes}, {"last_access_unix", e.last_access_unix}});
      std::cout << out.dump() << std::endl;
    } else {
      for (const CacheListing& e : *entries) {
        char when[32] = "-";
        std::time_t t = e.last_access_unix;
        if (t) std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
        std::printf("%s %10llu %s\n", e.key.c_str(), (unsigned long long)e.bytes, when);
      }
    }
    return k_exit_ok;
  }
  if (*args.rm) {
    if (Status s = client.cache_remove(args.key); !s) return report_error(s.error(), connection.target);
    return k_exit_ok;
  }
  if (*args.gc) {
    std::optional<uint64_t> max = parse_size(args.max_size);
    if (!max) return usage_error("cache", "--max-size takes bytes, optionally with K, M, G or T");
    Result<CacheGcResult> gc = client.cache_gc(*max);
    if (!gc) return report_error(gc.error(), connection.target);
    std::printf("removed %llu entries (%llu bytes); %llu entries, %llu bytes remain\n",
                (unsigned long long)gc->removed_entries, (unsigned long long)gc->removed_bytes,
                (unsigned long long)gc->entries_after, (unsigned long long)gc->bytes_after);
    return k_exit_ok;
  }
  if (*args.verify) {
    Result<CacheVerifyResult> verify = client.cache_verify();
    if (!verify) return report_error(verify.error(), connection.target);
    std::printf("checked %llu entries, removed %llu bad ones", (unsigned long long)verify->checked,
                (unsigned long long)verify->removed);
    if (verify->temp_files_removed)
      std::printf(" and %llu temp file(s) of writers that died mid-write",
                  (unsigned long long)verify->temp_files_removed);
    std::printf("\n");
    return k_exit_ok;
  }
  if (*args.explain) {
    Result<ExplainSide> left = side_of(args.left, args.compile);
    if (!left) return usage_error("cache", left.error().message);
    CompileArgs right_flags = args.compile;
    if (!args.right_target.empty()) right_flags.target = args.right_target;
    right_flags.defines.insert(right_flags.defines.end(), args.right_defines.begin(), args.right_defines.end());
    Result<ExplainSide> right = side_of(args.right, right_flags);
    if (!right) return usage_error("cache", right.error().message);
    Result<KeyExplanation> explanation = client.explain(*left, *right);
    if (!explanation) return report_error(explanation.error(), connection.target);
    if (args.json) {
      nlohmann::json differences = nlohmann::json::array();
      for (const auto& d : explanation->differences)
        differences.push_back({{"name", d.name}, {"a", d.present_left ? nlohmann::json(d.left) : nlohmann::json()},
                               {"b", d.present_right ? nlohmann::json(d.right) : nlohmann::json()}});
      std::cout << nlohmann::json{{"a", explanation->left_key}, {"b", explanation->right_key}, {"same", explanation->left_key == explanation->right_key},
                                  {"differences", differences}}
                       .dump()
                << std::endl;
      return k_exit_ok;
    }
    std::printf("a: %s\nb: %s\n%s\n", explanation->left_key.c_str(), explanation->right_key.c_str(),
                explanation->left_key == explanation->right_key ? "same key" : "different keys:");
    std::map<std::string, bool> differs;
    for (const auto& d : explanation->differences) differs[d.name] = true;
    std::map<std::string, std::pair<std::string, std::string>> rows;
    std::vector<std::string> order;
    for (const KeyComponent& c : explanation->left) { rows[c.name].first = c.value; order.push_back(c.name); }
    for (const KeyComponent& c : explanation->right) {
      if (!rows.count(c.name)) order.push_back(c.name);
      rows[c.name].second = c.value;
    }
    auto shorten = [](std::string v) {
      std::replace(v.begin(), v.end(), '\n', ' ');
      return v.size() > 60 ? v.substr(0, 57) + "..." : v;
    };
    for (const std::string& name : order)
      std::printf("%s %-24s %-62s %s\n", differs.count(name) ? "*" : " ", name.c_str(), shorten(rows[name].first).c_str(),
                  shorten(rows[name].second).c_str());
    return k_exit_ok;
  }
  return k_exit_usage;
}

}  // namespace kjit::cli
