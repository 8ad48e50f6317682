// `kjit cache stats | ls | rm KEY | gc --max-size SIZE | verify | explain A B
// | export -o FILE | import FILE`.
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
  CLI::App* export_bundle = nullptr;
  CLI::App* import_bundle = nullptr;
  bool json = false;
  uint32_t limit = 0;
  std::string blob_namespace;  // ls: only the caller's client blobs under this namespace
  std::string key;
  std::string max_size;
  // explain: each side a cache key or a file compiled with `compile` flags.
  std::string left, right;
  CompileArgs compile;
  std::string right_target;
  std::vector<std::string> right_defines;
  // export / import: the bundle's file ("-": stdout / stdin), whose namespace.
  std::string bundle_file;
  std::string ns;
  std::vector<std::string> targets;
  bool recipes_only = false;
};

CLI::App* add_cache_command(CLI::App& app, CacheArgs& args);
int run_cache(const CacheArgs& args, const Connection& connection);

}  // namespace kjit::cli
