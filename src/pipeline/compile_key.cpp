#include "pipeline/compile_key.h"

#include <set>

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

// The union of what the pipeline's passes declare (PassImpl::declares_key),
// in pipeline order; a component two passes declare (two LLVM passes both
// name LLVM) counts once.
std::vector<KeyComponent> declared_by_passes(const KeyInputs& in) {
  std::vector<KeyComponent> out;
  std::set<std::string> seen;
  for (const StageSpec& stage : in.pipeline.stages)
    for (const std::string& name : stage.passes) {
      const PassImpl* pass = in.registry.find(name);
      if (!pass || !pass->declares_key) continue;  // an unknown pass fails the plan before any key
      for (KeyComponent& component : pass->declares_key(in.job, in.toolkit))
        if (seen.insert(component.name).second) out.push_back(std::move(component));
    }
  return out;
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
  // The build by name; what it is (its version and binaries' digests) comes
  // from its pass's declaration.
  if (!job.triton_build.empty()) c.push_back({"triton.build", job.triton_build});
  // The build's plugins the request switched off: they did not run.
  if (!job.triton_plugins_off.empty()) c.push_back({"triton.plugins_off", joined(job.triton_plugins_off)});
  c.push_back({"pipeline", in.pipeline.name + ": " + (in.pipeline_description
                                                          ? *in.pipeline_description
                                                          : describe_for_key(in.pipeline, in.registry))});
  if (!in.pass_args.empty()) {
    std::vector<std::string> args;
    for (const auto& [k, v] : in.pass_args) args.push_back(k + "=" + v);
    c.push_back({"pass_args", joined(args)});
  }
  // The toolchains the passes run and the request's facts they write into
  // the output, each as its pass declares it.
  for (KeyComponent& declared : declared_by_passes(in)) c.push_back(std::move(declared));
  for (const KeyComponent& plugin : in.plugin_components) c.push_back(plugin);
  return derive_key(std::move(c));
}

}  // namespace kjit
