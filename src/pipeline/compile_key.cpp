#include "pipeline/compile_key.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "backends/llvm/llvm_module.h"
#include "pipeline/amd_passes.h"

namespace kjit {
namespace {

std::string joined(const std::vector<std::string>& items, char separator = '\n') {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

bool uses_pass(const PipelineSpec& pipeline, std::string_view prefix) {
  for (const StageSpec& stage : pipeline.stages)
    for (const std::string& pass : stage.passes)
      if (pass.starts_with(prefix)) return true;
  return false;
}

// The digest of a toolkit's libdevice, read once per path: the key is derived
// for every request, hits included.
std::string libdevice_digest(const CudaToolkit& toolkit) {
  const std::string& path = toolkit.libdevice_path();
  if (path.empty()) return "none";
  static std::mutex mutex;
  static std::map<std::string, std::string> digests;
  std::lock_guard lock(mutex);
  if (auto it = digests.find(path); it != digests.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  // Unreadable now is not cached: the compile will say why.
  if (!in) return "unreadable";
  return digests[path] = sha256_hex(bytes.str());
}

}  // namespace

std::string describe_for_key(const PipelineSpec& pipeline, const PassRegistry& registry) {
  std::string out;
  for (const StageSpec& stage : pipeline.stages) {
    if (!out.empty()) out += ' ';
    out += stage.name + "[";
    for (size_t i = 0; i < stage.passes.size(); ++i) {
      const PassImpl* pass = registry.find(stage.passes[i]);
      if (i) out += ',';
      out += stage.passes[i] + "@" + (pass ? pass->version : "?");
      if (pass && pass->origin != "builtin") out += "(" + pass->origin + ")";
    }
    out += "]";
  }
  return out;
}

CacheKey compile_key(const KeyInputs& in) {
  const CompileJob& job = in.job;
  std::vector<KeyComponent> c;
  c.push_back({"input.kind", std::string(to_string(job.input_kind))});
  c.push_back({"input.digest", in.input_digest ? *in.input_digest : sha256_hex(job.input)});
  // NVRTC puts the source's name into the binary (__FILE__ in assert
  // messages, -lineinfo): two names, two artifacts. IR and PTX carry their
  // own file names; the request's name for them reaches only messages.
  if (job.input_kind == InputKind::cuda_source) c.push_back({"input.name", job.input_name});
  if (!job.headers.empty()) {
    std::string all;
    for (const auto& [name, content] : job.headers) all += name + '\0' + sha256_hex(content) + '\n';
    c.push_back({"input.headers", sha256_hex(all)});
  }
  if (!job.name_expressions.empty()) c.push_back({"name_expressions", joined(job.name_expressions)});
  c.push_back({"target", job.target.canonical()});
  c.push_back({"options", joined(job.options)});
  c.push_back({"artifact", std::string(to_string(job.wanted))});
  if (job.allow_ptx_fallback) c.push_back({"ptx_fallback", "allowed"});
  c.push_back({"pipeline", in.pipeline.name + ": " + (in.pipeline_description
                                                          ? *in.pipeline_description
                                                          : describe_for_key(in.pipeline, in.registry))});
  if (!in.pass_args.empty()) {
    std::vector<std::string> args;
    for (const auto& [k, v] : in.pass_args) args.push_back(k + "=" + v);
    c.push_back({"pass_args", joined(args)});
  }
  if (uses_pass(in.pipeline, "nvrtc")) c.push_back({"toolchain.nvrtc", in.toolkit.version()});
  if (uses_pass(in.pipeline, "nvjitlink")) c.push_back({"toolchain.nvjitlink", in.toolkit.version()});
  const bool amd = job.target.is_amd();
  if (uses_pass(in.pipeline, "llvm") || uses_pass(in.pipeline, "nvptx") || uses_pass(in.pipeline, "nvvm") ||
      uses_pass(in.pipeline, "libdevice") || uses_pass(in.pipeline, "amdgpu") || uses_pass(in.pipeline, "lld")) {
    c.push_back({"toolchain.llvm", llvm_version()});
    // Every module is compiled for this triple, whichever spelling it names.
    if (!amd) c.push_back({"llvm.triple", k_cuda_triple});
  }
  if (amd)
    for (KeyComponent& component : amd_toolchain_key(in.pipeline)) c.push_back(std::move(component));
  // For every job of a pipeline that links libdevice, not only those whose
  // module calls it: which do is known only once the module is parsed, and
  // the hit path parses nothing. libdevice changes with the toolkit, which
  // changes the nvJitLink component anyway.
  if (uses_pass(in.pipeline, "libdevice")) c.push_back({"toolchain.libdevice", libdevice_digest(in.toolkit)});
  for (const KeyComponent& plugin : in.plugin_components) c.push_back(plugin);
  return derive_key(std::move(c));
}

}  // namespace kjit
