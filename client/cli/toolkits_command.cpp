#include "client/cli/toolkits_command.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "client/cli/exit_codes.h"
#include "kjit/client.h"

namespace kjit::cli {
namespace {

std::string join_archs(const std::vector<uint32_t>& archs) {
  std::string text;
  for (uint32_t sm : archs) text += (text.empty() ? "" : " ") + std::to_string(sm);
  return text.empty() ? "none" : text;
}

// A library that did not load explains every place it looked; the table
// keeps the first line (--json has all of it).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

nlohmann::json to_json(const ToolkitListing& listing) {
  nlohmann::json toolkits = nlohmann::json::array();
  for (const ToolkitDescription& t : listing.toolkits)
    toolkits.push_back({{"origin", t.origin},       {"home", t.home},           {"version", t.version},
                        {"nvrtc", t.nvrtc},         {"nvjitlink", t.nvjitlink}, {"nvfatbin", t.nvfatbin},
                        {"archs", t.archs},         {"include_dirs", t.include_dirs},
                        {"notes", t.notes},         {"pinned", t.pinned},       {"libdevice", t.libdevice}});
  nlohmann::json routes = nlohmann::json::array();
  for (const ToolkitListing::Route& r : listing.routes)
    routes.push_back({{"target", r.target}, {"toolkit", r.toolkit}, {"supported", r.supported}, {"reason", r.reason}});
  nlohmann::json triton = nlohmann::json::array();
  for (const ToolkitListing::TritonBuild& b : listing.triton) {
    if (!b.error.empty()) {
      triton.push_back({{"error", b.error}});
      continue;
    }
    // Each plugin: a package installed in the build's environment, by
    // distribution and version with its libraries' digests, or a library the
    // build ships or the daemon configured.
    nlohmann::json plugins = nlohmann::json::array();
    for (const ToolkitListing::TritonPlugin& p : b.installed_plugins) {
      nlohmann::json libraries = nlohmann::json::array();
      for (const auto& [path, sha256] : p.libraries) libraries.push_back({{"path", path}, {"sha256", sha256}});
      plugins.push_back({{"distribution", p.distribution}, {"version", p.version}, {"libraries", libraries},
                         {"stages_hook_sha256", p.stages_hook_sha256}, {"environment", p.environment}});
    }
    for (const ToolkitListing::TritonPlugin& p : b.configured_plugins)
      for (const auto& [path, sha256] : p.libraries)
        plugins.push_back({{"library", path}, {"sha256", sha256}, {"configured", true}, {"environment", p.environment}});
    for (const std::string& library : b.plugins) plugins.push_back({{"library", library}});
    triton.push_back({{"name", b.name},           {"version", b.version},       {"distribution", b.distribution},
                      {"python", b.python},       {"backends", b.backends},     {"cuda_archs", b.cuda_archs},
                      {"hip_archs", b.hip_archs}, {"plugins", plugins},         {"ptxas", b.ptxas},
                      {"options", b.options},     {"libtriton_sha256", b.libtriton_sha256},
                      {"tlx", b.tlx},             {"tlx_provider", b.tlx_provider},
                      {"plugin_loader", b.plugin_loader},
                      {"borrowed_ptxas", b.borrowed_ptxas.cuda_archs.empty()
                                             ? nlohmann::json()
                                             : nlohmann::json{{"path", b.borrowed_ptxas.path},
                                                              {"version", b.borrowed_ptxas.version},
                                                              {"sha256", b.borrowed_ptxas.sha256},
                                                              {"from_build", b.borrowed_ptxas.from_build},
                                                              {"cuda_archs", b.borrowed_ptxas.cuda_archs}}},
                      {"default", b.is_default}});
  }
  return {{"toolkits", toolkits}, {"routes", routes}, {"policy", listing.policy},
          {"fatbin_toolkit", listing.fatbin_toolkit}, {"triton", triton}};
}

void print_table(const ToolkitListing& listing) {
  for (size_t i = 0; i < listing.toolkits.size(); ++i) {
    const ToolkitDescription& t = listing.toolkits[i];
    std::printf("[%zu] CUDA %s (%s) at %s%s\n", i, t.version.c_str(), t.origin.c_str(), t.home.c_str(),
                t.pinned.empty() ? "" : (", pinned to " + t.pinned).c_str());
    std::printf("    nvrtc:     %s\n    nvjitlink: %s\n    nvfatbin:  %s\n", first_line(t.nvrtc).c_str(),
                first_line(t.nvjitlink).c_str(), first_line(t.nvfatbin).c_str());
    std::printf("    archs:     %s\n", join_archs(t.archs).c_str());
    for (const std::string& dir : t.include_dirs) std::printf("    headers:   %s\n", dir.c_str());
    if (!t.libdevice.empty()) std::printf("    libdevice: %s\n", t.libdevice.c_str());
    for (const std::string& note : t.notes) std::printf("    note:      %s\n", note.c_str());
  }
  std::printf("\npolicy: %s\n", listing.policy.c_str());
  std::printf("fatbins combined by: %s\n",
              listing.fatbin_toolkit < 0 ? "none (no nvFatbin found)"
                                         : ("[" + std::to_string(listing.fatbin_toolkit) + "]").c_str());
  std::printf("\n%-10s %-8s %s\n", "target", "toolkit", "why");
  for (const ToolkitListing::Route& r : listing.routes) {
    std::string which = "[" + std::to_string(r.toolkit) + "]";
    std::printf("%-10s %-8s %s%s\n", r.target.c_str(), which.c_str(), r.reason.c_str(),
                r.supported ? "" : " (cannot build it)");
  }
  if (listing.triton.empty()) std::printf("\nTriton builds: none\n");
  else std::printf("\nTriton builds:\n");
  for (const ToolkitListing::TritonBuild& b : listing.triton) {
    if (!b.error.empty()) {
      std::printf("  not used: %s\n", b.error.c_str());
      continue;
    }
    std::string gfx;
    for (const std::string& g : b.hip_archs) gfx += (gfx.empty() ? "" : " ") + g;
    std::printf("  %s%s%s at %s\n", b.name.c_str(), b.is_default ? " (default)" : "", b.tlx ? ", with TLX" : "",
                b.python.c_str());
    std::printf("    cuda archs: %s\n    hip archs:  %s\n", join_archs(b.cuda_archs).c_str(),
                gfx.empty() ? "none" : gfx.c_str());
    for (const std::string& p : b.ptxas) std::printf("    ptxas:      %s\n", p.c_str());
    if (!b.borrowed_ptxas.cuda_archs.empty())
      std::printf("    ptxas:      %s (%s, %s's) for %s\n", b.borrowed_ptxas.path.c_str(), b.borrowed_ptxas.version.c_str(),
                  b.borrowed_ptxas.from_build.c_str(), join_archs(b.borrowed_ptxas.cuda_archs).c_str());
    for (const ToolkitListing::TritonPlugin& p : b.installed_plugins) {
      std::printf("    plugin:     %s %s%s\n", p.distribution.c_str(), p.version.c_str(),
                  b.tlx_provider == p.distribution ? " (its TLX)" : "");
      for (const auto& [path, sha256] : p.libraries)
        std::printf("                %s sha256:%s\n", path.c_str(), sha256.substr(0, 16).c_str());
    }
    for (const ToolkitListing::TritonPlugin& p : b.configured_plugins)
      for (const auto& [path, sha256] : p.libraries)
        std::printf("    plugin:     %s sha256:%s (configured)\n", path.c_str(), sha256.substr(0, 16).c_str());
    for (const std::string& p : b.plugins) std::printf("    plugin:     %s\n", p.c_str());
  }
}

}  // namespace

CLI::App* add_toolkits_command(CLI::App& app, ToolkitsArgs& args) {
  CLI::App* cmd = app.add_subcommand("toolkits", "the CUDA toolkits and Triton builds kjitd found, and which toolkit builds each target");
  cmd->add_flag("--json", args.json, "print JSON");
  return cmd;
}

int run_toolkits(const ToolkitsArgs& args, const Connection& connection) {
  // A daemon just started may still be asking its Triton builds what they
  // are (a second or more each), which the listing waits for.
  Client client = connection.client(std::chrono::seconds(180));
  Result<ToolkitListing> listing = client.toolkits();
  if (!listing) return report_error(listing.error(), connection.target);
  if (args.json) std::cout << to_json(*listing).dump() << std::endl;
  else print_table(*listing);
  return k_exit_ok;
}

}  // namespace kjit::cli
