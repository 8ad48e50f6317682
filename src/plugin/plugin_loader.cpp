#include "plugin/plugin_loader.h"

#include <dlfcn.h>

#include "kjit/plugin.h"

namespace kjit {
namespace {

Error plugin_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::failed_precondition, "plugin " + path + ": " + what);
}

std::string text(const char* s) { return s ? s : ""; }

// Collects what a plugin's pass writes through the C callbacks.
struct PassSink {
  std::string ir;
  std::string diagnostics;
  static void write_ir(void* host, const char* data, size_t size) {
    if (data && size) static_cast<PassSink*>(host)->ir.append(data, size);
  }
  static void diagnostic(void* host, const char* message) {
    auto* sink = static_cast<PassSink*>(host);
    sink->diagnostics += text(message);
    sink->diagnostics += '\n';
  }
};

struct KeySink {
  KeyHookResult result;
  static void add_component(void* host, const char* name, const char* value) {
    static_cast<KeySink*>(host)->result.components.push_back({text(name), text(value)});
  }
  static void replace_input_digest(void* host, const char* digest) {
    static_cast<KeySink*>(host)->result.input_digest = text(digest);
  }
};

Result<IrKind> ir_kind(const std::string& path, const char* value, const std::string& where) {
  std::optional<IrKind> kind = parse_ir_kind(text(value));
  if (!kind) return plugin_error(path, where + " names IR kind '" + text(value) + "' (cuda-source, ptx, llvm, cubin)");
  return *kind;
}

Result<StageSpec> stage_from(const std::string& path, const kjit_stage_desc& desc) {
  StageSpec stage;
  stage.name = text(desc.name);
  if (stage.name.empty()) return plugin_error(path, "a stage has no name");
  auto takes = ir_kind(path, desc.takes, "stage " + stage.name);
  if (!takes) return takes.error();
  auto gives = ir_kind(path, desc.gives, "stage " + stage.name);
  if (!gives) return gives.error();
  stage.takes = *takes;
  stage.gives = *gives;
  for (size_t i = 0; i < desc.pass_count; ++i) stage.passes.push_back(text(desc.passes[i]));
  return stage;
}

PassImpl pass_from(const std::string& plugin_name, const kjit_pass_desc& desc, IrKind takes, IrKind gives) {
  PassImpl pass;
  pass.name = text(desc.name);
  pass.version = text(desc.version);
  pass.takes = takes;
  pass.gives = gives;
  for (size_t i = 0; i < desc.arg_key_count; ++i) pass.arg_keys.push_back(text(desc.arg_keys[i]));
  pass.origin = plugin_name;
  // The plugin's name and version and the pass's version are in the key
  // (the pipeline's description); anything else its output depends on, the
  // plugin adds with its key hook.
  pass.declares_key = declares_nothing;
  kjit_pass_fn fn = desc.run;
  std::string name = pass.name;
  pass.run = [fn, name, plugin_name, takes](PassContext& ctx, std::string_view ir) -> Result<PassOutput> {
    std::vector<kjit_pass_arg> args;
    for (const auto& [k, v] : ctx.args) args.push_back({k.c_str(), v.c_str()});
    std::string kind(to_string(takes));
    std::string target = ctx.job.target.canonical();
    kjit_pass_input input{ir.data(), ir.size(), kind.c_str(), target.c_str(), args.data(), args.size()};
    PassSink sink;
    kjit_pass_output output{&sink, &PassSink::write_ir, &PassSink::diagnostic};
    int rc = fn(&input, &output);
    if (rc != 0) {
      return make_error(ErrorCode::invalid_argument,
                        "pass '" + name + "' of plugin " + plugin_name + " failed (code " + std::to_string(rc) + ")",
                        sink.diagnostics);
    }
    if (sink.ir.empty()) {
      return make_error(ErrorCode::internal, "pass '" + name + "' of plugin " + plugin_name + " returned no IR",
                        sink.diagnostics);
    }
    return PassOutput{std::move(sink.ir), std::move(sink.diagnostics)};
  };
  return pass;
}

}  // namespace

Result<LoadedPlugin> load_plugin(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return plugin_error(path, std::string("cannot load: ") + (why ? why : "unknown reason"));
  }
  auto get_info = reinterpret_cast<kjit_plugin_get_info_fn>(dlsym(handle, KJIT_PLUGIN_ENTRY_POINT));
  if (!get_info) return plugin_error(path, "does not export " KJIT_PLUGIN_ENTRY_POINT "()");
  const kjit_plugin_info* info = get_info();
  if (!info) return plugin_error(path, KJIT_PLUGIN_ENTRY_POINT "() returned NULL");
  if (info->api_version != KJIT_PLUGIN_API_VERSION) {
    return plugin_error(path, "built for plugin ABI version " + std::to_string(info->api_version) +
                                  "; this kjitd supports version " + std::to_string(KJIT_PLUGIN_API_VERSION));
  }
  LoadedPlugin plugin;
  plugin.path = path;
  plugin.name = text(info->name);
  plugin.version = text(info->version);
  if (plugin.name.empty() || plugin.version.empty()) return plugin_error(path, "has no name or version");

  for (size_t i = 0; i < info->pass_count; ++i) {
    const kjit_pass_desc& desc = info->passes[i];
    if (!desc.name || !*desc.name || !desc.run) return plugin_error(path, "pass #" + std::to_string(i) + " has no name or function");
    auto takes = ir_kind(path, desc.takes, "pass " + text(desc.name));
    if (!takes) return takes.error();
    auto gives = ir_kind(path, desc.gives, "pass " + text(desc.name));
    if (!gives) return gives.error();
    plugin.passes.push_back(pass_from(plugin.name, desc, *takes, *gives));
  }

  for (size_t i = 0; i < info->edit_count; ++i) {
    const kjit_edit_desc& desc = info->edits[i];
    PipelineEdit edit;
    edit.origin = "plugin " + plugin.name;
    edit.scope = text(desc.pipeline);
    edit.anchor = text(desc.anchor);
    edit.pass = text(desc.pass);
    switch (desc.op) {
      case KJIT_EDIT_INSERT_BEFORE: edit.op = EditOp::insert_before; break;
      case KJIT_EDIT_INSERT_AFTER: edit.op = EditOp::insert_after; break;
      case KJIT_EDIT_DISABLE: edit.op = EditOp::disable; break;
      case KJIT_EDIT_REPLACE: edit.op = EditOp::replace; break;
      case KJIT_EDIT_OVERRIDE_STAGE: edit.op = EditOp::override_stage; break;
      case KJIT_EDIT_OVERRIDE_PIPELINE: edit.op = EditOp::override_pipeline; break;
      default: return plugin_error(path, "edit #" + std::to_string(i) + " has unknown operation " + std::to_string(desc.op));
    }
    bool needs_anchor = edit.op != EditOp::override_stage && edit.op != EditOp::override_pipeline;
    bool needs_pass = edit.op == EditOp::insert_before || edit.op == EditOp::insert_after || edit.op == EditOp::replace;
    if (needs_anchor && edit.anchor.empty()) return plugin_error(path, "edit #" + std::to_string(i) + " names no anchor pass");
    if (needs_pass && edit.pass.empty()) return plugin_error(path, "edit #" + std::to_string(i) + " names no pass");
    if (edit.op == EditOp::override_stage) {
      if (desc.stage_count != 1 || !desc.stages) return plugin_error(path, "override-stage edit needs exactly one stage");
      auto stage = stage_from(path, desc.stages[0]);
      if (!stage) return stage.error();
      edit.stage = *stage;
    }
    if (edit.op == EditOp::override_pipeline) {
      if (edit.scope.empty()) return plugin_error(path, "override-pipeline edit must name the pipeline it defines");
      if (desc.stage_count == 0 || !desc.stages) return plugin_error(path, "override-pipeline edit has no stages");
      edit.pipeline.name = edit.scope;
      for (size_t s = 0; s < desc.stage_count; ++s) {
        auto stage = stage_from(path, desc.stages[s]);
        if (!stage) return stage.error();
        edit.pipeline.stages.push_back(*stage);
      }
      for (size_t k = 0; k < desc.input_count; ++k) {
        std::optional<InputKind> input = parse_input_kind(text(desc.inputs[k]));
        if (!input) return plugin_error(path, "override-pipeline names unknown input kind '" + text(desc.inputs[k]) + "'");
        edit.pipeline.inputs.push_back(*input);
      }
    }
    plugin.edits.push_back(std::move(edit));
  }

  if (info->key_hook) {
    kjit_key_fn fn = info->key_hook;
    std::string name = plugin.name;
    plugin.key_hook_scope = text(info->key_hook_pipeline);
    plugin.key_hook = [fn, name](const CompileJob& job) -> Result<KeyHookResult> {
      std::string kind(to_string(job.input_kind));
      std::string target = job.target.canonical();
      kjit_key_input input{job.input.data(), job.input.size(), kind.c_str(), target.c_str()};
      KeySink sink;
      kjit_key_output output{&sink, &KeySink::add_component, &KeySink::replace_input_digest};
      int rc = fn(&input, &output);
      if (rc != 0)
        return make_error(ErrorCode::invalid_argument, "key hook of plugin " + name + " failed (code " + std::to_string(rc) + ")");
      return std::move(sink.result);
    };
  }
  // The library stays loaded for the daemon's life: its functions are in use.
  return plugin;
}

}  // namespace kjit
