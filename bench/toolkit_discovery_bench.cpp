// What toolkit discovery adds to kjitd's start (and every worker's): the
// system toolkit alone, then the system toolkit plus NVIDIA's wheels in the
// project's prefix, each timed in a fresh process (--only system|all) so the
// dynamic loader's cache does not favour the second.
#include <chrono>
#include <cstdio>
#include <string>

#include "backends/toolkit_discovery.h"

int main(int argc, char** argv) {
  std::string only = argc > 2 && std::string(argv[1]) == "--only" ? argv[2] : "all";
  kjit::ToolkitSearch search;
  if (only == "system") search.local_prefix.clear();
  auto start = std::chrono::steady_clock::now();
  std::vector<kjit::DiscoveredToolkit> found = kjit::discover_cuda_toolkits(search);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.2f ms, %zu toolkit(s):", ms, found.size());
  for (const kjit::DiscoveredToolkit& t : found) std::printf(" %s %s", t.origin.c_str(), t.toolkit->version().c_str());
  std::printf("\n");
  return 0;
}
