#include "client/cli/cache_commands.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
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


Error file_error(const std::string& what, const std::string& path) {
  return make_error(ErrorCode::failed_precondition, what + " " + path + ": " + std::strerror(errno));
}

// The bundle goes to FILE.partial first and takes its name once whole, so a
// failed export never leaves a truncated bundle under the name asked for.
int run_export(const CacheArgs& args, const Connection& connection, Client& client) {
  const bool to_stdout = args.bundle_file == "-";
  const std::string partial = args.bundle_file + ".partial";
  std::FILE* out = to_stdout ? stdout : std::fopen(partial.c_str(), "wb");
  if (!out) return report_error(file_error("cannot write", partial), connection.target);
  BundleExportOptions options{args.ns, args.targets, args.recipes_only};
  Result<BundleExportResult> exported = client.export_bundle(options, [&](std::string_view bytes) -> Status {
    if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size()) return file_error("cannot write", partial);
    return Ok{};
  });
  const bool flushed = std::fflush(out) == 0;
  if (!to_stdout) {
    const bool closed = std::fclose(out) == 0;
    if (exported && (!flushed || !closed)) exported = file_error("cannot write", partial);
    if (exported && std::rename(partial.c_str(), args.bundle_file.c_str()) != 0)
      exported = file_error("cannot rename " + partial + " to", args.bundle_file);
    if (!exported) std::remove(partial.c_str());
  }
  if (!exported) return report_error(exported.error(), connection.target);
  // On stdout the bundle is the output: the summary goes to stderr.
  std::FILE* summary = to_stdout ? stderr : stdout;
  if (args.json) {
    std::fprintf(summary, "%s\n",
                 nlohmann::json{{"file", args.bundle_file},
                                {"entries", exported->entries},
                                {"blobs", exported->blobs},
                                {"recipes", exported->recipes},
                                {"bytes", exported->bytes}}
                     .dump()
                     .c_str());
  } else {
    std::fprintf(summary, "exported %llu entries, %llu blobs and %llu recipes to %s (%llu bytes)\n",
                 (unsigned long long)exported->entries, (unsigned long long)exported->blobs,
                 (unsigned long long)exported->recipes, args.bundle_file.c_str(), (unsigned long long)exported->bytes);
  }
  return k_exit_ok;
}

int run_import(const CacheArgs& args, const Connection& connection, Client& client) {
  const bool from_stdin = args.bundle_file == "-";
  std::FILE* in = from_stdin ? stdin : std::fopen(args.bundle_file.c_str(), "rb");
  if (!in) return report_error(file_error("cannot read", args.bundle_file), connection.target);
  Result<BundleImportResult> imported =
      client.import_bundle(args.ns, [&](char* buffer, size_t capacity) -> Result<size_t> {
        const size_t got = std::fread(buffer, 1, capacity, in);
        if (got == 0 && std::ferror(in)) return file_error("cannot read", args.bundle_file);
        return got;
      });
  if (!from_stdin) std::fclose(in);
  if (!imported) return report_error(imported.error(), connection.target);
  if (args.json) {
    nlohmann::json skips = nlohmann::json::array();
    for (const BundleImportSkip& s : imported->skips)
      skips.push_back({{"reason", s.reason}, {"count", s.count}, {"example", s.example}});
    std::cout << nlohmann::json{{"file", args.bundle_file},
                                {"namespace", imported->ns},
                                {"entries_imported", imported->entries_imported},
                                {"blobs_imported", imported->blobs_imported},
                                {"recipes_imported", imported->recipes_imported},
                                {"skipped", imported->skipped},
                                {"skips", skips},
                                {"entry_format", imported->entry_format},
                                {"toolchains", imported->toolchains},
                                {"bundle_bytes", imported->bundle_bytes}}
                     .dump()
              << std::endl;
    return k_exit_ok;
  }
  const std::string where = imported->ns.empty() ? "the default namespace" : "namespace " + imported->ns;
  std::printf("imported %llu entries, %llu blobs and %llu recipes into %s; skipped %llu\n",
              (unsigned long long)imported->entries_imported, (unsigned long long)imported->blobs_imported,
              (unsigned long long)imported->recipes_imported, where.c_str(), (unsigned long long)imported->skipped);
  for (const BundleImportSkip& s : imported->skips)
    std::printf("  %8llu  %s%s%s\n", (unsigned long long)s.count, s.reason.c_str(), s.example.empty() ? "" : ", e.g. ",
                s.example.c_str());
  return k_exit_ok;
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
  args.ls->add_option("--blob-namespace", args.blob_namespace,
                      "only your client blobs and groups stored under this namespace, each with what it holds");
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
  args.export_bundle = cache->add_subcommand(
      "export", "write the cache's entries, client blobs and recipes to a portable, checksummed bundle");
  args.export_bundle->add_option("-o,--output", args.bundle_file, "the bundle's file; - for stdout")->required();
  args.export_bundle->add_option("--namespace", args.ns, "another cache namespace (the operator's)");
  args.export_bundle->add_option("--target", args.targets,
                                 "only compile entries built for these targets (cuda:90, hip:gfx942); no client blobs");
  args.export_bundle->add_flag("--recipes-only", args.recipes_only, "only the recipes, for a node that warms them itself");
  args.export_bundle->add_flag("--json", args.json, "print the summary as JSON");
  args.import_bundle = cache->add_subcommand(
      "import", "load a bundle into the cache's tiers; entries already there are kept");
  args.import_bundle->add_option("file", args.bundle_file, "the bundle (kjit cache export); - for stdin")->required();
  args.import_bundle->add_option("--namespace", args.ns, "another cache namespace (the operator's)");
  args.import_bundle->add_flag("--json", args.json, "print JSON");
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
    Result<std::vector<CacheListing>> entries = client.cache_list(args.limit, args.blob_namespace);
    if (!entries) return report_error(entries.error(), connection.target);
    if (args.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const CacheListing& e : *entries) {
        nlohmann::json entry{{"key", e.key}, {"bytes", e.bytes}, {"last_access_unix", e.last_access_unix}};
        if (!e.blob_kind.empty())
          entry.update({{"blob_kind", e.blob_kind},
                        {"blob_namespace", e.blob_namespace},
                        {"blob_key", e.blob_key},
                        {"blob_name", e.blob_name}});
        out.push_back(std::move(entry));
      }
      std::cout << out.dump() << std::endl;
    } else {
      for (const CacheListing& e : *entries) {
        char when[32] = "-";
        std::time_t t = e.last_access_unix;
        if (t) std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
        std::printf("%s %10llu %s", e.key.c_str(), (unsigned long long)e.bytes, when);
        if (!e.blob_kind.empty())
          std::printf(" %s %s/%s/%s", e.blob_kind.c_str(), e.blob_namespace.c_str(), e.blob_key.c_str(),
                      e.blob_name.c_str());
        std::printf("\n");
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
  if (*args.export_bundle) return run_export(args, connection, client);
  if (*args.import_bundle) return run_import(args, connection, client);
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
