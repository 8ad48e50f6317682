#include "backends/triton/triton_discovery.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <future>
#include <mutex>
#include <set>

#include "backends/triton/triton_interpreter.h"

namespace kjit {
namespace {

// Importing Triton and hashing its libraries; a loaded machine may take a
// while, a hung interpreter must not hold Triton input back for ever.
constexpr std::chrono::seconds k_probe_timeout{120};

std::mutex& failures_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<std::string>& failures() {
  static std::vector<std::string> list;
  return list;
}

}  // namespace

Result<TritonBuild> probe_triton_build(const std::string& python, const std::string& scratch_dir) {
  Result<std::unique_ptr<TritonInterpreter>> child = TritonInterpreter::start(python, scratch_dir);
  if (!child) return child.error();
  Result<std::string> answer = (*child)->ask(R"({"op": "describe"})", k_probe_timeout);
  if (!answer)
    return make_error(ErrorCode::failed_precondition, python + " does not describe a Triton build: " + answer.error().message);
  return parse_triton_build(*answer, python);
}

TritonDiscovery discover_triton_builds(const TritonBuildSearch& search, const std::string& scratch_dir) {
  const std::vector<std::string> candidates = triton_build_candidates(search);
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
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  return found;
}

void discover_triton_builds_on_first_use(TritonBuildSearch search, std::string scratch_dir) {
  set_triton_builds_source([search = std::move(search), scratch_dir = std::move(scratch_dir)] {
    TritonDiscovery found = discover_triton_builds(search, scratch_dir);
    for (const TritonBuild& build : found.builds)
      spdlog::info("Triton build {} ({}): {} back ends, {} CUDA architectures{}", build.name, build.python,
                   build.backends.size(), build.cuda_archs.size(), build.tlx ? ", TLX" : "");
    for (const std::string& failure : found.failures) spdlog::warn("Triton build not used: {}", failure);
    {
      std::lock_guard lock(failures_mutex());
      failures() = found.failures;
    }
    return std::move(found.builds);
  });
}

std::vector<std::string> triton_discovery_failures() {
  std::lock_guard lock(failures_mutex());
  return failures();
}

}  // namespace kjit
