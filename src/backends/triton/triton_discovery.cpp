#include "backends/triton/triton_discovery.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <set>

#include "backends/triton/triton_descriptions.h"
#include "backends/triton/triton_interpreter.h"

namespace kjit {
namespace {

// Importing Triton and hashing its libraries; a loaded machine may take a
// while, a hung interpreter must not hold Triton input back for ever.
constexpr std::chrono::seconds k_probe_timeout{120};

// Each asks one question and ends: none outlives the daemon that asked (a
// daemon stopped during discovery would otherwise leave interpreters
// importing Triton and compiling probes for half a minute more).
const TritonInterpreterOptions k_discovery_interpreter{.environment = {}, .ends_with_starting_thread = true};

std::mutex& failures_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<std::string>& failures() {
  static std::vector<std::string> list;
  return list;
}

std::pair<int, int> version_of(const std::string& text) {
  int major = 0, minor = 0;
  std::sscanf(text.c_str(), "%d.%d", &major, &minor);
  return {major, minor};
}

const TritonPtxas* blackwell_ptxas(const TritonBuild& build) {
  for (const TritonPtxas& ptxas : build.ptxas)
    if (std::filesystem::path(ptxas.path).filename() == "ptxas-blackwell") return &ptxas;
  return nullptr;
}

// What the build's interpreter compiles for `targets` with `ptxas` as its
// ptxas-blackwell; nothing when it cannot say.
std::vector<uint32_t> archs_built_with(const TritonBuild& build, const std::vector<uint32_t>& archs,
                                       const std::string& ptxas, const std::string& scratch_dir) {
  TritonInterpreterOptions options = k_discovery_interpreter;
  options.description = build.description;  // described already: only the lent ptxas is probed
  Result<std::unique_ptr<TritonInterpreter>> child = TritonInterpreter::start(build.python, scratch_dir, options);
  if (!child) return {};
  nlohmann::json targets = nlohmann::json::array();
  for (uint32_t sm : archs) targets.push_back("cuda:" + std::to_string(sm));
  const nlohmann::json ask = {{"op", "probe_targets"}, {"targets", targets}, {"ptxas_blackwell", ptxas}};
  Result<std::string> answer = (*child)->ask(ask.dump(), k_probe_timeout);
  (*child).reset();
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  std::vector<uint32_t> out;
  const nlohmann::json result = answer ? nlohmann::json::parse(*answer, nullptr, false) : nlohmann::json();
  if (result.is_object() && result.value("ok", false))
    for (const nlohmann::json& target : result.value("accepted", nlohmann::json::array()))
      if (target.is_string() && target.get<std::string>().rfind("cuda:", 0) == 0)
        out.push_back(static_cast<uint32_t>(std::stoul(target.get<std::string>().substr(5))));
  return out;
}

// Logs what was found and keeps what was not used, for `kjit toolkits`.
void log_discovery(const TritonDiscovery& found) {
  for (const TritonBuild& build : found.builds) {
    spdlog::info("Triton build {} ({}): {} back ends, {} CUDA architectures{}", build.name, build.python,
                 build.backends.size(), build.cuda_archs.size(), build.tlx ? ", TLX" : "");
    if (!build.borrowed_cuda_archs.empty())
      spdlog::info("Triton build {}: {} CUDA architecture(s) with {}'s ptxas-blackwell {}", build.name,
                   build.borrowed_cuda_archs.size(), build.borrowed_from, build.borrowed_ptxas.version);
    for (const TritonConfiguredPlugin& plugin : build.configured_plugins)
      spdlog::info("Triton build {}: configured plugin {}", build.name, plugin.name());
  }
  for (const std::string& failure : found.failures) spdlog::warn("Triton build not used: {}", failure);
  std::lock_guard lock(failures_mutex());
  failures() = found.failures;
}

}  // namespace

Result<TritonBuild> probe_triton_build(const std::string& python, const std::string& scratch_dir) {
  Result<std::unique_ptr<TritonInterpreter>> child = TritonInterpreter::start(python, scratch_dir, k_discovery_interpreter);
  if (!child) return child.error();
  Result<std::string> answer = (*child)->ask(R"({"op": "describe"})", k_probe_timeout);
  if (!answer)
    return make_error(ErrorCode::failed_precondition, python + " does not describe a Triton build: " + answer.error().message);
  return parse_triton_build(*answer, python);
}

TritonDiscovery discover_triton_builds(const TritonBuildSearch& search, const std::string& scratch_dir,
                                       const std::string& descriptions_dir) {
  const std::vector<std::string> candidates = triton_build_candidates(search);
  if (!descriptions_dir.empty() && !candidates.empty())
    if (std::optional<std::vector<TritonBuild>> remembered = recall_triton_builds(descriptions_dir, candidates))
      return TritonDiscovery{std::move(*remembered), {}};
  std::vector<std::future<Result<TritonBuild>>> probes;
  for (size_t i = 0; i < candidates.size(); ++i)
    probes.push_back(std::async(std::launch::async, probe_triton_build, candidates[i],
                                scratch_dir + "/probe-" + std::to_string(i)));
  TritonDiscovery found;
  std::set<std::string> names;
  for (size_t i = 0; i < probes.size(); ++i) {
    Result<TritonBuild> build = probes[i].get();
    if (!build) {
      found.failures.push_back(candidates[i] + ": " + build.error().message);
    } else if (!names.insert(build->name).second) {
      found.failures.push_back(candidates[i] + ": " + build->name + " again (the first one found is used)");
    } else {
      found.builds.push_back(std::move(build.value()));
    }
  }
  lend_newer_ptxas(found.builds, scratch_dir + "/lend");
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  // A candidate that did not answer may answer next time: only a discovery
  // without failures is one to repeat.
  if (!descriptions_dir.empty() && found.failures.empty() && !found.builds.empty())
    remember_triton_builds(descriptions_dir, candidates, found.builds);
  return found;
}

void lend_newer_ptxas(std::vector<TritonBuild>& builds, const std::string& scratch_dir) {
  struct Loan {
    size_t borrower;
    TritonPtxas ptxas;
    std::string from;
    std::vector<uint32_t> archs;
  };
  std::vector<Loan> loans;
  for (size_t i = 0; i < builds.size(); ++i) {
    const TritonPtxas* own = blackwell_ptxas(builds[i]);
    if (!own) continue;
    const TritonBuild* lender = nullptr;
    for (const TritonBuild& other : builds) {
      const TritonPtxas* theirs = blackwell_ptxas(other);
      if (&other == &builds[i] || !theirs || version_of(theirs->version) <= version_of(own->version)) continue;
      if (!lender || version_of(theirs->version) > version_of(blackwell_ptxas(*lender)->version)) lender = &other;
    }
    if (!lender) continue;
    Loan loan{i, *blackwell_ptxas(*lender), lender->name, {}};
    for (uint32_t sm : lender->cuda_archs)
      if (sm >= 100 && std::find(builds[i].cuda_archs.begin(), builds[i].cuda_archs.end(), sm) == builds[i].cuda_archs.end())
        loan.archs.push_back(sm);
    if (!loan.archs.empty()) loans.push_back(std::move(loan));
  }
  std::vector<std::future<std::vector<uint32_t>>> probes;
  for (size_t i = 0; i < loans.size(); ++i)
    probes.push_back(std::async(std::launch::async, archs_built_with, std::cref(builds[loans[i].borrower]),
                                loans[i].archs, loans[i].ptxas.path, scratch_dir + "/" + std::to_string(i)));
  for (size_t i = 0; i < loans.size(); ++i) {
    std::vector<uint32_t> accepted = probes[i].get();
    if (accepted.empty()) continue;
    TritonBuild& build = builds[loans[i].borrower];
    build.borrowed_ptxas = loans[i].ptxas;
    build.borrowed_from = loans[i].from;
    build.borrowed_cuda_archs = accepted;
    build.cuda_archs.insert(build.cuda_archs.end(), accepted.begin(), accepted.end());
    std::sort(build.cuda_archs.begin(), build.cuda_archs.end());
    build.executables.push_back(build.borrowed_ptxas.path);
    // Workers know the builds from their descriptions: the loan goes there too.
    nlohmann::json description = nlohmann::json::parse(build.description, nullptr, false);
    if (!description.is_object()) continue;
    description["cuda_archs"] = build.cuda_archs;
    description["executables"] = build.executables;
    description["borrowed_ptxas"] = {{"path", build.borrowed_ptxas.path},
                                     {"sha256", build.borrowed_ptxas.sha256},
                                     {"version", build.borrowed_ptxas.version},
                                     {"from_build", build.borrowed_from},
                                     {"cuda_archs", build.borrowed_cuda_archs}};
    build.description = description.dump();
  }
}

Status check_triton_plugins_load(const TritonBuild& build, const std::string& scratch_dir) {
  std::string names;
  for (const TritonConfiguredPlugin& plugin : build.configured_plugins)
    if (!plugin.library.empty()) names += (names.empty() ? "" : ", ") + plugin.library;
  const std::string what = names.empty() ? "its configured plugins' settings" : names;
  Result<std::unique_ptr<TritonInterpreter>> child =
      TritonInterpreter::start(build.python, scratch_dir,
                               {.environment = build.interpreter_environment(),
                                .ends_with_starting_thread = true,
                                .description = build.description});
  if (!child) return child.error();
  nlohmann::json ask = {{"op", "check_plugins"}, {"plugins", build.job_plugin_libraries()}};
  Result<std::string> answer = (*child)->ask(ask.dump(), k_probe_timeout);
  (*child).reset();  // ended before its working directory goes
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  if (!answer)
    return make_error(ErrorCode::failed_precondition, "Triton build '" + build.name + "' cannot load " + what + ": " +
                                                          answer.error().message);
  const nlohmann::json result = nlohmann::json::parse(*answer, nullptr, false);
  if (!result.is_object() || !result.value("ok", false)) {
    Error error = make_error(ErrorCode::failed_precondition,
                             "Triton build '" + build.name + "' cannot load " + what + ": " +
                                 (result.is_object() ? result.value("message", std::string("?")) : *answer));
    if (result.is_object()) error.log = result.value("log", std::string());
    return error;
  }
  return Ok{};
}

Result<TritonDiscovery> discover_configured_triton_builds(const TritonBuildSearch& search,
                                                          const std::vector<TritonPluginSetting>& settings,
                                                          const std::string& scratch_dir,
                                                          const std::string& descriptions_dir) {
  TritonDiscovery found = discover_triton_builds(search, scratch_dir + "/discovery", descriptions_dir);
  if (Status configured = configure_triton_plugins(found.builds, settings); !configured) return configured.error();
  std::vector<std::future<Status>> checks;
  for (size_t i = 0; i < found.builds.size(); ++i)
    if (!found.builds[i].configured_plugins.empty())
      checks.push_back(std::async(std::launch::async, check_triton_plugins_load, std::cref(found.builds[i]),
                                  scratch_dir + "/check-" + std::to_string(i)));
  Status first = Ok{};
  for (std::future<Status>& check : checks)
    if (Status s = check.get(); !s && first) first = s;
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  if (!first) return first.error();
  log_discovery(found);
  return found;
}

void discover_triton_builds_on_first_use(TritonBuildSearch search, std::string scratch_dir,
                                         std::string descriptions_dir) {
  set_triton_builds_source([search = std::move(search), scratch_dir = std::move(scratch_dir),
                            descriptions_dir = std::move(descriptions_dir)] {
    TritonDiscovery found = discover_triton_builds(search, scratch_dir, descriptions_dir);
    log_discovery(found);
    return std::move(found.builds);
  });
}

std::vector<std::string> triton_discovery_failures() {
  std::lock_guard lock(failures_mutex());
  return failures();
}

}  // namespace kjit
