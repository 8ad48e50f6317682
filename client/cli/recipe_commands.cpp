#include "client/cli/recipe_commands.h"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "client/cli/exit_codes.h"
#include "kjit/client.h"

namespace kjit::cli {
namespace {

std::string time_text(int64_t unix_seconds) {
  if (unix_seconds == 0) return "-";
  char when[32];
  std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return when;
}

nlohmann::json summary_json(const RecipeSummary& r) {
  return {{"digest", r.digest},
          {"input_kind", std::string(to_string(r.input_kind))},
          {"input_name", r.input_name},
          {"artifact", std::string(to_string(r.artifact))},
          {"bytes", r.bytes},
          {"created_unix", r.created_unix},
          {"last_asked_unix", r.last_asked_unix},
          {"last_target", r.last_target}};
}

nlohmann::json request_json(const CompileRequest& request) {
  nlohmann::json headers = nlohmann::json::object();
  for (const auto& [name, content] : request.headers) headers[name] = content.size();
  return {{"input_kind", std::string(to_string(request.input_kind))},
          {"input_name", request.input_name},
          {"input_bytes", request.input.size()},
          {"options", request.options},
          {"headers", headers},
          {"name_expressions", request.name_expressions},
          {"pipeline", request.pipeline},
          {"pass_args", request.pass_args},
          {"allow_ptx_fallback", request.allow_ptx_fallback}};
}

}  // namespace

std::optional<int64_t> parse_since(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    try {
      return static_cast<int64_t>(std::stoll(text));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end != '\0') {
    tm = {};
    end = strptime(text.c_str(), "%Y-%m-%d", &tm);
    if (!end || *end != '\0') return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm));
}

CLI::App* add_recipes_command(CLI::App& app, RecipeArgs& args) {
  CLI::App* recipes = app.add_subcommand("recipes", "the requests kjitd compiled, kept without their targets");
  recipes->require_subcommand(1);
  args.ls = recipes->add_subcommand("ls", "list recipes, most recently asked first");
  args.ls->add_option("--since", args.since, "only those asked since DATE (YYYY-MM-DD[THH:MM:SS], UTC; or unix seconds)");
  args.ls->add_option("--limit", args.limit, "at most this many");
  args.show = recipes->add_subcommand("show", "show a recipe: the request without its target");
  args.show->add_option("digest", args.digest, "the recipe's digest (kjit recipes ls)")->required();
  args.rm = recipes->add_subcommand("rm", "remove a recipe");
  args.rm->add_option("digest", args.digest, "the recipe's digest (kjit recipes ls)")->required();
  for (CLI::App* command : {args.ls, args.show, args.rm}) {
    command->add_option("--namespace", args.ns, "another cache namespace's recipes (the operator's)");
    command->add_flag("--json", args.json, "print JSON");
    command->fallthrough();
  }
  return recipes;
}

int run_recipes(const RecipeArgs& args, const Connection& connection) {
  Client client = connection.client();
  if (*args.ls) {
    int64_t since = 0;
    if (!args.since.empty()) {
      std::optional<int64_t> parsed = parse_since(args.since);
      if (!parsed) return usage_error("recipes", "--since takes YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS or unix seconds");
      since = *parsed;
    }
    Result<std::vector<RecipeSummary>> recipes = client.list_recipes(args.ns, since, args.limit);
    if (!recipes) return report_error(recipes.error(), connection.target);
    if (args.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const RecipeSummary& r : *recipes) out.push_back(summary_json(r));
      std::cout << out.dump() << std::endl;
      return k_exit_ok;
    }
    for (const RecipeSummary& r : *recipes)
      std::printf("%s %-12s %-24s %9llu  last %s (%s)\n", r.digest.c_str(), std::string(to_string(r.input_kind)).c_str(),
                  r.input_name.c_str(), static_cast<unsigned long long>(r.bytes), time_text(r.last_asked_unix).c_str(),
                  r.last_target.c_str());
    return k_exit_ok;
  }
  if (*args.show) {
    Result<Recipe> recipe = client.get_recipe(args.ns, args.digest);
    if (!recipe) return report_error(recipe.error(), connection.target);
    if (args.json) {
      nlohmann::json out = summary_json(recipe->summary);
      out["request"] = request_json(recipe->request);
      std::cout << out.dump() << std::endl;
      return k_exit_ok;
    }
    const CompileRequest& request = recipe->request;
    std::printf("digest: %s\ninput: %s (%s, %zu bytes)\nartifact: %s\ncreated: %s\nlast asked: %s (%s)\n",
                recipe->summary.digest.c_str(), request.input_name.c_str(),
                std::string(to_string(request.input_kind)).c_str(), request.input.size(),
                std::string(to_string(recipe->summary.artifact)).c_str(),
                time_text(recipe->summary.created_unix).c_str(), time_text(recipe->summary.last_asked_unix).c_str(),
                recipe->summary.last_target.c_str());
    for (const std::string& option : request.options) std::printf("option: %s\n", option.c_str());
    for (const auto& [name, content] : request.headers) std::printf("header: %s (%zu bytes)\n", name.c_str(), content.size());
    for (const std::string& expression : request.name_expressions) std::printf("name expression: %s\n", expression.c_str());
    if (!request.pipeline.empty()) std::printf("pipeline: %s\n", request.pipeline.c_str());
    for (const auto& [key, value] : request.pass_args) std::printf("pass arg: %s = %s\n", key.c_str(), value.c_str());
    return k_exit_ok;
  }
  if (*args.rm) {
    Result<bool> removed = client.remove_recipe(args.ns, args.digest);
    if (!removed) return report_error(removed.error(), connection.target);
    if (!*removed) {
      std::fprintf(stderr, "kjit recipes rm: no recipe %s\n", args.digest.c_str());
      return k_exit_compile_error;
    }
    return k_exit_ok;
  }
  return k_exit_usage;
}

}  // namespace kjit::cli
