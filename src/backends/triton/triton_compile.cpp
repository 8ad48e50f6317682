#include "backends/triton/triton_compile.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>
#include <nlohmann/json.hpp>

#include "backends/triton/json_strings.h"
#include "backends/triton/triton_interpreter.h"

namespace kjit {
namespace {

using nlohmann::json;

struct Interpreters {
  std::mutex mutex;
  std::string home;
  std::map<std::string, std::unique_ptr<TritonInterpreter>> by_build;
  TritonJobBounds bounds;
  std::optional<std::string> last_bound;  // take_triton_job_bound's
};

// How long an interpreter may take, past its job's own time bound, to say
// that the bound stopped the job.
constexpr std::chrono::seconds k_answer_grace{10};
Interpreters& interpreters() {
  static Interpreters all;
  return all;
}

std::string home_directory() {
  Interpreters& all = interpreters();
  if (!all.home.empty()) return all.home;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/kjit-triton-" + std::to_string(::getpid());
}

std::optional<std::string> base64_decode(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

// "name=value" back to the JSON value Triton's options class expects, by the
// type the build described.
json typed_value(const TritonBuild& build, const Target& target, const std::string& name, const std::string& text) {
  const auto& fields = build.options.at(std::string(TritonBuild::backend_of(target)));
  std::string type = fields.count(name) ? fields.at(name) : "str";
  if (type.ends_with('?')) {
    if (text == "none") return nullptr;
    type.pop_back();
  }
  if (type == "int") return std::stoll(text);
  if (type == "bool") return text == "true";
  if (type == "float") return std::stod(text);
  return text;
}

std::string ir_of(const std::string& input_name) {
  for (const char* ext : {"ttir", "ttgir", "glir"})
    if (input_name.ends_with(std::string(".") + ext)) return ext;
  return {};
}

ErrorCode code_of(const std::string& code) {
  if (code == "invalid_argument") return ErrorCode::invalid_argument;
  if (code == "failed_precondition") return ErrorCode::failed_precondition;
  if (code == "resource_exhausted") return ErrorCode::resource_exhausted;
  if (code == "deadline_exceeded") return ErrorCode::deadline_exceeded;
  return ErrorCode::internal;
}

// The bound a job's child crossed, named as an operator sets it.
std::string bound_message(const std::string& bound, const TritonJobBounds& bounds, const std::string& what) {
  if (bound == "cpu")
    return "the Triton compile went past --compile-cpu-seconds (limits.compile_cpu_seconds = " +
           std::to_string(bounds.cpu_seconds) + " s): " + what;
  if (bound == "memory")
    return "the Triton compile went past --compile-memory (limits.compile_memory_bytes = " +
           std::to_string(bounds.memory_bytes) + "): " + what;
  return "the Triton compile went past its time bound (--compile-timeout, limits.compile_timeout_s): " + what;
}

}  // namespace

void set_triton_home(std::string directory) {
  std::lock_guard lock(interpreters().mutex);
  interpreters().home = std::move(directory);
}

void set_triton_job_bounds(TritonJobBounds bounds) {
  std::lock_guard lock(interpreters().mutex);
  interpreters().bounds = bounds;
}

std::optional<std::string> take_triton_job_bound() {
  std::lock_guard lock(interpreters().mutex);
  return std::exchange(interpreters().last_bound, std::nullopt);
}

namespace {

json target_json(const Target& target) {
  if (target.is_amd()) return {{"backend", "hip"}, {"arch", target.processor}, {"warp_size", 64}};
  return {{"backend", "cuda"}, {"arch", target.sm}, {"warp_size", 32}};
}

std::vector<TritonStage> stages_of(const json& list, const char* name_key) {
  std::vector<TritonStage> out;
  if (list.is_array())
    for (const json& stage : list)
      if (stage.is_object()) out.push_back({stage.value(name_key, std::string()), json_strings(stage.value("passes", json()))});
  return out;
}

// The plugin libraries a job loads itself: the pipeline's ([triton]
// plugins, for every build that loads plugins with extend_with) and the
// build's configured ones, less those switched off.
std::vector<std::string> job_plugins(const TritonBuild& build, const std::vector<std::string>& pipeline_plugins_given,
                                     const std::vector<std::string>& off) {
  const bool all_off = std::find(off.begin(), off.end(), "*") != off.end();
  const std::vector<std::string> pipeline_plugins =
      build.plugin_loader == "extend_with" ? pipeline_plugins_given : std::vector<std::string>{};
  const std::vector<std::string> configured = build.job_plugin_libraries();
  std::vector<std::string> out;
  for (const std::vector<std::string>* list : {&pipeline_plugins, &configured})
    for (const std::string& path : *list)
      if (!all_off && std::find(off.begin(), off.end(), path) == off.end() &&
          std::find(out.begin(), out.end(), path) == out.end())
        out.push_back(path);
  return out;
}

// One question to the build's interpreter (started at the first, kept for
// the next ones): its answer when it says ok, else the error it gave.
Result<json> ask_interpreter(const TritonBuild& build, json question, const Target& target,
                             std::chrono::milliseconds timeout, bool warm_up) {
  // One question at a time per process (a worker runs one job at a time);
  // the lock keeps in-process callers (tests) from sharing a child's pipe.
  Interpreters& all = interpreters();
  std::lock_guard lock(all.mutex);
  all.last_bound.reset();
  // The job's child takes the bounds; the interpreter only waits for it.
  json bounds = json::object();
  if (all.bounds.cpu_seconds > 0) bounds["cpu_seconds"] = all.bounds.cpu_seconds;
  if (all.bounds.memory_bytes > 0) bounds["memory_bytes"] = all.bounds.memory_bytes;
  const std::chrono::milliseconds time =
      all.bounds.time.count() > 0 ? std::min(all.bounds.time, timeout) : timeout;
  bounds["time_ms"] = time.count();
  question["bounds"] = std::move(bounds);
  if (warm_up) question["background"] = true;
  std::unique_ptr<TritonInterpreter>& child = all.by_build[build.name];
  if (!child || !child->alive()) {
    Result<std::unique_ptr<TritonInterpreter>> started =
        TritonInterpreter::start(build.python, home_directory() + "/" + build.name,
                                 {.warm_at_idle = warm_up,
                                  .environment = build.interpreter_environment(),
                                  .description = build.description});
    if (!started) return started.error();
    child = std::move(started.value());
  }
  Result<std::string> answer_text =
      child->ask(question.dump(-1, ' ', false, json::error_handler_t::replace), time + k_answer_grace);
  if (!answer_text) {
    // LLVM and MLIR abort the process on some inputs they cannot lower
    // ("LLVM ERROR: Cannot select"): the module caused it, and the
    // interpreter is started again at the next compile.
    if (answer_text.error().message.find("killed by signal 6") != std::string::npos)
      return make_error(ErrorCode::invalid_argument,
                        "Triton aborted compiling this module for " + target.canonical() +
                            " (its diagnostic, such as \"LLVM ERROR: ...\", is in kjitd's log): " +
                            answer_text.error().message);
    return answer_text.error();
  }
  json answer = json::parse(*answer_text, nullptr, false);
  if (!answer.is_object()) return make_error(ErrorCode::internal, "the Triton interpreter answered something that is not JSON");
  if (!answer.value("ok", false)) {
    std::string message = answer.value("message", std::string("Triton failed"));
    const std::string bound = answer.value("bound", std::string());
    if (!bound.empty()) {
      message = bound_message(bound, all.bounds, message);
      all.last_bound = bound;
    }
    Error error = make_error(code_of(answer.value("code", std::string("internal"))), std::move(message));
    error.log = answer.value("log", std::string());
    return error;
  }
  return answer;
}

}  // namespace

Result<TritonCompileOutput> compile_triton(const TritonBuild& build, const TritonCompileRequest& request) {
  if (!build.builds(request.target))
    return make_error(ErrorCode::failed_precondition,
                      "Triton build '" + build.name + "' does not build " + request.target.canonical());
  json options = json::object();
  for (const std::string& option : request.options) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos) continue;
    options[option.substr(0, eq)] = typed_value(build, request.target, option.substr(0, eq), option.substr(eq + 1));
  }
  json ask = {{"op", "compile"}, {"source", request.module_text}, {"target", target_json(request.target)},
              {"options", options}};
  if (std::string ir = ir_of(request.input_name); !ir.empty()) ask["ir"] = ir;
  if (!request.edits_json.empty()) {
    json edits = json::parse(request.edits_json, nullptr, false);
    if (!edits.is_array()) return make_error(ErrorCode::internal, "the pipeline's Triton edits are not a JSON list");
    ask["edits"] = std::move(edits);
  }
  if (std::vector<std::string> plugins = job_plugins(build, request.plugins, request.plugins_off); !plugins.empty())
    ask["plugins"] = std::move(plugins);
  if (!request.plugins_off.empty()) ask["plugins_off"] = request.plugins_off;
  if (const TritonPtxas* lent = build.borrowed_ptxas_for(request.target)) ask["ptxas_blackwell"] = lent->path;

  Result<json> answer = ask_interpreter(build, std::move(ask), request.target, request.timeout, false);
  if (!answer) return answer.error();
  TritonCompileOutput out;
  std::optional<std::string> binary = base64_decode(answer->value("binary_b64", std::string()));
  if (!binary || binary->empty()) return make_error(ErrorCode::internal, "Triton's answer holds no binary");
  out.binary = std::move(*binary);
  out.metadata = answer->value("metadata_json", std::string());
  out.kernel_name = answer->value("name", std::string());
  // Triton's names are "<kernel>.<ext>"; the kernel's name is in the metadata.
  const json files = answer->value("files", json::object());
  for (const auto& [filename, text] : files.items()) {
    const size_t dot = filename.rfind('.');
    if (dot == std::string::npos || !text.is_string()) continue;
    const std::string extension = filename.substr(dot + 1);
    if (extension != "json" && extension != "source") out.files[extension] = text.get<std::string>();
  }
  for (const json& stage : answer->value("stages", json::array()))
    if (stage.is_object()) out.stages.push_back({stage.value("stage", std::string()), stage.value("ms", 0.0), {}});
  out.passes = stages_of(answer->value("passes", json::array()), "stage");
  out.log = answer->value("log", std::string());
  return out;
}

Result<TritonPipeline> describe_triton_pipeline(const TritonBuild& build, const Target& target,
                                                const std::vector<std::string>& plugins, bool warm_up,
                                                const std::vector<std::string>& plugins_off) {
  if (!build.builds(target))
    return make_error(ErrorCode::failed_precondition, "Triton build '" + build.name + "' does not build " + target.canonical());
  json ask = {{"op", "pipeline"}, {"target", target_json(target)}, {"options", json::object()}};
  if (std::vector<std::string> all = job_plugins(build, plugins, plugins_off); !all.empty()) ask["plugins"] = std::move(all);
  if (!plugins_off.empty()) ask["plugins_off"] = plugins_off;
  if (const TritonPtxas* lent = build.borrowed_ptxas_for(target)) ask["ptxas_blackwell"] = lent->path;
  Result<json> answer = ask_interpreter(build, std::move(ask), target, std::chrono::minutes(5), warm_up);
  if (!answer) return answer.error();
  TritonPipeline out;
  out.stages = stages_of(answer->value("stages", json::array()), "name");
  const json skipped = answer->value("skipped", json::object());
  if (skipped.is_object())
    for (const auto& [ir, stages] : skipped.items()) out.skipped[ir] = json_strings(stages);
  return out;
}

}  // namespace kjit
