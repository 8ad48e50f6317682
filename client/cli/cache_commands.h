// `kjit cache stats | ls | rm KEY | gc --max-size SIZE | verify | explain A B`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "client/cli/compile_command.h"

namespace kjit::cli {

struct CacheArgs {
  CLI::App* stats = nullptr;
  CLI::App* ls = nullptr;
  CLI::App* rm = nullptr;
  CLI::App* gc = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* explain = nullptr;
  bool json = false;
  uint32_t limit = 0;
  std::string key;
  std::string max_size;
  // explain: each side a cache key or a file compiled with `compile` flags.
  std::string left, right;
  CompileArgs compile;
  std::string right_target;
  std::vector<std::string> right_defines;
};

CLI::App* add_cache_command(CLI::App& app, CacheArgs& args);
int run_cache(const CacheArgs& args, const Connection& connection);

}  // namespace kjit::cli
