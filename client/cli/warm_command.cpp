#include "client/cli/warm_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "client/cli/exit_codes.h"
#include "client/cli/recipe_commands.h"
#include "kjit/client.h"

namespace kjit::cli {
namespace {

bool is_digest(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Digests from a file: the first word of each line that is one, so the
// output of `kjit recipes ls` serves as it is; other lines are skipped.
Result<std::vector<std::string>> read_digests(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::invalid_argument, "cannot read " + path);
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::string line;
  while (std::getline(in, line)) {
    const std::string word = line.substr(0, line.find_first_of(" \t\r"));
    if (is_digest(word) && seen.insert(word).second) out.push_back(word);
  }
  return out;
}

int run_seal(const WarmArgs& args, const Connection& connection) {
  Client client = connection.client();
  // No --namespace: the seal (or its lifting) is the whole daemon's.
  const bool all = args.ns.empty();
  Result<std::vector<WarmupSealState>> seals = client.set_seal(args.unseal, all, args.ns, args.after_warmup);
  if (!seals) return report_error(seals.error(), connection.target);
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const WarmupSealState& s : *seals)
      out.push_back({{"all_namespaces", s.all_namespaces}, {"namespace", s.ns}, {"after_warmup", s.after_warmup},
                     {"sealed_unix", s.sealed_unix}});
    std::cout << out.dump() << std::endl;
    return k_exit_ok;
  }
  if (seals->empty()) std::printf("unsealed: every miss compiles\n");
  for (const WarmupSealState& s : *seals)
    std::printf("sealed: %s, after_warmup = %s\n",
                s.all_namespaces ? "every namespace" : ("namespace '" + s.ns + "'").c_str(), s.after_warmup.c_str());
  return k_exit_ok;
}

struct Failure {
  std::string digest;
  std::string reason;
};

}  // namespace

CLI::App* add_warm_command(CLI::App& app, WarmArgs& args) {
  CLI::App* warm = app.add_subcommand(
      "warm", "compile every recorded recipe for a target (--target), or seal warm-up (--seal, --unseal)");
  warm->add_option("--target,-t", args.target, "the target to build every recipe for (cuda:107, hip:gfx942)");
  warm->add_option("--namespace", args.ns, "seal or unseal this cache namespace alone (the operator's)");
  warm->add_option("--since", args.since, "only recipes asked since DATE (YYYY-MM-DD[THH:MM:SS], UTC; or unix seconds)");
  warm->add_option("--recipes", args.recipes_file, "only the recipes whose digests this file lists (kjit recipes ls)");
  warm->add_flag("--json", args.json, "print the summary as JSON");
  warm->add_flag("--seal", args.seal, "declare warm-up over: misses are counted, warned of or refused");
  warm->add_flag("--unseal", args.unseal, "lift the seal");
  warm->add_option("--after-warmup", args.after_warmup, "with --seal: count, warn or refuse (default: the daemon's)")
      ->check(CLI::IsMember({"count", "warn", "refuse"}));
  return warm;
}

int run_warm(const WarmArgs& args, const Connection& connection) {
  const int modes = (args.seal ? 1 : 0) + (args.unseal ? 1 : 0) + (args.target.empty() ? 0 : 1);
  if (modes != 1) return usage_error("warm", "give one of --target, --seal or --unseal");
  if (args.seal || args.unseal) return run_seal(args, connection);
  // Compiles land in the caller's own namespace: a tenant's recipes are
  // warmed with its token, so no one fills another's entries.
  if (!args.ns.empty())
    return usage_error("warm", "--target builds the caller's own namespace's recipes; run it with that tenant's token");
  int64_t since = 0;
  if (!args.since.empty()) {
    std::optional<int64_t> parsed = parse_since(args.since);
    if (!parsed) return usage_error("warm", "--since takes YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS or unix seconds");
    since = *parsed;
  }
  Client client = connection.client();
  Result<std::vector<RecipeSummary>> listed = client.list_recipes({}, since);
  if (!listed) return report_error(listed.error(), connection.target);
  std::vector<std::string> digests;
  if (!args.recipes_file.empty()) {
    Result<std::vector<std::string>> wanted = read_digests(args.recipes_file);
    if (!wanted) return usage_error("warm", wanted.error().message);
    std::set<std::string> known;
    for (const RecipeSummary& r : *listed) known.insert(r.digest);
    for (const std::string& digest : *wanted)
      if (known.count(digest)) digests.push_back(digest);
  } else {
    for (const RecipeSummary& r : *listed) digests.push_back(r.digest);
  }

  // A compile for a new target may take minutes (CUB, CUTLASS).
  Client compiler = connection.client(std::chrono::minutes(10));
  const bool progress = isatty(STDERR_FILENO) && !args.json;
  uint64_t compiled = 0, cached = 0;
  std::vector<Failure> failures;
  const auto started = std::chrono::steady_clock::now();
  for (size_t i = 0; i < digests.size(); ++i) {
    if (progress)
      std::fprintf(stderr, "\r[%zu/%zu] compiled %llu, already cached %llu, failed %zu", i + 1, digests.size(),
                   static_cast<unsigned long long>(compiled), static_cast<unsigned long long>(cached),
                   failures.size());
    Result<Recipe> recipe = client.get_recipe({}, digests[i]);
    if (!recipe) {
      failures.push_back({digests[i], recipe.error().message});
      continue;
    }
    CompileRequest request = std::move(recipe->request);
    request.target = args.target;
    Result<CompileResult> result = compiler.compile(request);
    if (!result) {
      failures.push_back({digests[i], result.error().message});
      continue;
    }
    ++(result->cache == "compiled" || result->cache == "joined" ? compiled : cached);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (args.json) {
    nlohmann::json failed = nlohmann::json::array();
    for (const Failure& f : failures) failed.push_back({{"digest", f.digest}, {"reason", f.reason}});
    std::cout << nlohmann::json{{"target", args.target},
                                {"recipes", digests.size()},
                                {"compiled", compiled},
                                {"already_cached", cached},
                                {"failed", failures.size()},
                                {"failures", failed},
                                {"seconds", seconds}}
                     .dump()
              << std::endl;
  } else {
    std::printf("%s: %zu recipes: %llu compiled, %llu already cached, %zu failed (%.1f s)\n", args.target.c_str(),
                digests.size(), static_cast<unsigned long long>(compiled), static_cast<unsigned long long>(cached),
                failures.size(), seconds);
    for (const Failure& f : failures) {
      std::string reason = f.reason.substr(0, f.reason.find('\n'));
      std::printf("  failed %s: %s\n", f.digest.c_str(), reason.c_str());
    }
  }
  return failures.empty() ? k_exit_ok : k_exit_compile_error;
}

}  // namespace kjit::cli
