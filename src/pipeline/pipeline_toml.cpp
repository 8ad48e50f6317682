#include "pipeline/pipeline_toml.h"

#include <toml++/toml.h>

#include <cctype>
#include <sstream>

namespace kjit {
namespace {

Error config_error(const std::string& source, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, "config " + source + ": " + what);
}

Result<std::string> string_at(const toml::table& t, const char* key, const std::string& source, const std::string& where,
                              bool required = true) {
  const toml::node* node = t.get(key);
  if (!node) {
    if (required) return config_error(source, where + " needs '" + key + "'");
    return std::string();
  }
  auto v = node->value<std::string>();
  if (!v) return config_error(source, where + "." + key + " must be a string");
  return *v;
}

Result<std::vector<std::string>> strings_at(const toml::table& t, const char* key, const std::string& source,
                                            const std::string& where) {
  std::vector<std::string> out;
  const toml::node* node = t.get(key);
  if (!node) return out;
  const toml::array* array = node->as_array();
  if (!array) return config_error(source, where + "." + key + " must be an array of strings");
  for (const toml::node& item : *array) {
    auto v = item.value<std::string>();
    if (!v) return config_error(source, where + "." + key + " must be an array of strings");
    out.push_back(*v);
  }
  return out;
}

Result<IrKind> kind_at(const toml::table& t, const char* key, const std::string& source, const std::string& where) {
  auto text = string_at(t, key, source, where);
  if (!text) return text.error();
  auto kind = parse_ir_kind(*text);
  if (!kind) return config_error(source, where + "." + key + " = '" + *text + "' is not an IR kind (cuda-source, ptx, llvm, cubin)");
  return *kind;
}

Status check_keys(const toml::table& t, std::initializer_list<std::string_view> allowed, const std::string& source,
                  const std::string& where) {
  for (auto&& [key, node] : t) {
    bool ok = false;
    for (std::string_view a : allowed) ok |= key.str() == a;
    if (!ok) return config_error(source, "unknown key " + where + "." + std::string(key.str()));
  }
  return Ok{};
}

Result<StageSpec> read_stage(const toml::table& t, const std::string& source, const std::string& where) {
  if (Status s = check_keys(t, {"name", "takes", "gives", "passes"}, source, where); !s) return s.error();
  StageSpec stage;
  auto name = string_at(t, "name", source, where);
  if (!name) return name.error();
  stage.name = *name;
  auto takes = kind_at(t, "takes", source, where);
  if (!takes) return takes.error();
  auto gives = kind_at(t, "gives", source, where);
  if (!gives) return gives.error();
  auto passes = strings_at(t, "passes", source, where);
  if (!passes) return passes.error();
  stage.takes = *takes;
  stage.gives = *gives;
  stage.passes = *passes;
  return stage;
}

Result<PipelineSpec> read_pipeline(const std::string& name, const toml::table& t, const std::string& source) {
  std::string where = "pipelines." + name;
  if (Status s = check_keys(t, {"inputs", "stages", "args"}, source, where); !s) return s.error();
  PipelineSpec pipeline;
  pipeline.name = name;
  auto inputs = strings_at(t, "inputs", source, where);
  if (!inputs) return inputs.error();
  for (const std::string& input : *inputs) {
    auto kind = parse_input_kind(input);
    if (!kind) return config_error(source, where + ".inputs names unknown input kind '" + input + "'");
    pipeline.inputs.push_back(*kind);
  }
  const toml::array* stages = t.get_as<toml::array>("stages");
  if (!stages || stages->empty()) return config_error(source, where + " needs [[" + where + ".stages]]");
  for (const toml::node& node : *stages) {
    const toml::table* stage_table = node.as_table();
    if (!stage_table) return config_error(source, where + ".stages must be tables");
    auto stage = read_stage(*stage_table, source, where + ".stages");
    if (!stage) return stage.error();
    pipeline.stages.push_back(*stage);
  }
  if (const toml::node* args = t.get("args")) {
    const toml::table* args_table = args->as_table();
    if (!args_table) return config_error(source, where + ".args must be a table of \"pass.key\" = \"value\"");
    for (auto&& [key, value] : *args_table) {
      auto v = value.value<std::string>();
      if (!v || key.str().find('.') == std::string_view::npos)
        return config_error(source, where + ".args entries are \"pass.key\" = \"value\"");
      pipeline.args[std::string(key.str())] = *v;
    }
  }
  return pipeline;
}

Result<PipelineEdit> read_edit(const toml::table& t, const std::string& source, size_t index) {
  std::string where = "edits[" + std::to_string(index) + "]";
  if (Status s = check_keys(t, {"op", "anchor", "pass", "pipeline", "stage"}, source, where); !s) return s.error();
  PipelineEdit edit;
  edit.origin = "config " + source;
  auto op_text = string_at(t, "op", source, where);
  if (!op_text) return op_text.error();
  auto op = parse_edit_op(*op_text);
  if (!op || *op == EditOp::override_pipeline) {
    return config_error(source, where + ".op = '" + *op_text +
                                    "'; use insert-before, insert-after, disable, replace or override-stage "
                                    "(define a whole pipeline under [pipelines.NAME])");
  }
  edit.op = *op;
  auto scope = string_at(t, "pipeline", source, where, false);
  if (!scope) return scope.error();
  edit.scope = *scope;
  if (edit.op == EditOp::override_stage) {
    const toml::table* stage = t.get_as<toml::table>("stage");
    if (!stage) return config_error(source, where + " (override-stage) needs a stage table");
    auto spec = read_stage(*stage, source, where + ".stage");
    if (!spec) return spec.error();
    edit.stage = *spec;
    return edit;
  }
  auto anchor = string_at(t, "anchor", source, where);
  if (!anchor) return anchor.error();
  edit.anchor = *anchor;
  if (edit.op != EditOp::disable) {
    auto pass = string_at(t, "pass", source, where);
    if (!pass) return pass.error();
    edit.pass = *pass;
  }
  return edit;
}

// A basic string, escapes and all: toml++'s default would write a text that
// starts with a newline as a multi-line string, whose first newline TOML
// drops on reading, so the name would not read back.
std::string quoted(std::string_view text) {
  std::ostringstream out;
  const toml::value<std::string> value{std::string(text)};
  out << toml::toml_formatter(value, toml::format_flags::none);
  return out.str();
}

// A bare key when TOML allows one, else a quoted key.
std::string key_text(std::string_view key) {
  bool bare = !key.empty();
  for (char c : key) bare &= std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  return bare ? std::string(key) : quoted(key);
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quoted(items[i]);
  return out + "]";
}

}  // namespace

Status read_pipeline_config(const toml::table& root, const std::string& source, PipelineConfig& config) {
  if (const toml::node* node = root.get("pipelines")) {
    const toml::table* pipelines = node->as_table();
    if (!pipelines) return config_error(source, "pipelines must be a table of [pipelines.NAME]");
    for (auto&& [name, value] : *pipelines) {
      const toml::table* t = value.as_table();
      if (!t) return config_error(source, "pipelines." + std::string(name.str()) + " must be a table");
      auto pipeline = read_pipeline(std::string(name.str()), *t, source);
      if (!pipeline) return pipeline.error();
      config.pipelines.push_back(*pipeline);
    }
  }
  if (const toml::node* node = root.get("edits")) {
    const toml::array* edits = node->as_array();
    if (!edits) return config_error(source, "edits must be an array of [[edits]] tables");
    for (size_t i = 0; i < edits->size(); ++i) {
      const toml::table* t = (*edits)[i].as_table();
      if (!t) return config_error(source, "edits must be an array of [[edits]] tables");
      auto edit = read_edit(*t, source, i);
      if (!edit) return edit.error();
      config.edits.push_back(*edit);
    }
  }
  return Ok{};
}

std::string pipeline_to_toml(const PipelineSpec& pipeline) {
  std::string name = key_text(pipeline.name);
  std::string out = "[pipelines." + name + "]\n";
  std::vector<std::string> inputs;
  for (InputKind input : pipeline.inputs) inputs.emplace_back(to_string(input));
  out += "inputs = " + quoted_list(inputs) + "\n";
  if (!pipeline.args.empty()) {
    out += "args = { ";
    bool first = true;
    for (const auto& [key, value] : pipeline.args) {
      out += (first ? "" : ", ") + quoted(key) + " = " + quoted(value);
      first = false;
    }
    out += " }\n";
  }
  for (const StageSpec& stage : pipeline.stages) {
    out += "\n[[pipelines." + name + ".stages]]\n";
    out += "name = " + quoted(stage.name) + "\n";
    out += "takes = " + quoted(to_string(stage.takes)) + "\n";
    out += "gives = " + quoted(to_string(stage.gives)) + "\n";
    out += "passes = " + quoted_list(stage.passes) + "\n";
  }
  return out;
}

}  // namespace kjit
