#include "client/cli/launch_commands.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client/cli/compile_json.h"
#include "client/cli/exit_codes.h"

namespace kjit::cli {
namespace {


// "256" or "256,2" or "8,8,4".
std::optional<Dim3> parse_dims(const std::string& text) {
  Dim3 d{1, 1, 1};
  uint32_t* parts[] = {&d.x, &d.y, &d.z};
  size_t start = 0;
  for (int i = 0; i < 3 && start <= text.size(); ++i) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + end, *parts[i]);
    if (ec != std::errc{} || ptr != text.data() + end) return std::nullopt;
    if (end == text.size()) return d;
    start = end + 1;
  }
  return std::nullopt;
}

void add_shape_options(CLI::App* cmd, LaunchArgsCli& args) {
  cmd->add_option("file", args.compile.file, "kernel source: .cu, .hip, .ptx, .ll, .bc, .ttir, .ttgir");
  cmd->add_option("--key", args.key, "a cache key instead of a file");
  cmd->add_option("--target,-t", args.compile.target,
                  "target, e.g. cuda:90 or hip:gfx90a; several, comma-separated, for a fatbin or a code-object bundle");
  cmd->add_option("--device-target", args.device_target,
                  "with several targets: the GPU to plan for, e.g. cuda:100 (default: the daemon's GPU)");
  cmd->add_option("--kernel,-k", args.kernel, "kernel name (source-level or lowered)")->required();
  cmd->add_option("--grid", args.grid, "blocks: X[,Y,Z]");
  cmd->add_option("--block", args.block, "threads per block: X[,Y,Z]");
  cmd->add_option("--cluster", args.cluster, "blocks per cluster: X[,Y,Z]");
  cmd->add_option("--dynamic-smem", args.dynamic_smem, "dynamic shared memory per block, bytes");
  cmd->add_flag("--cooperative", args.cooperative, "cooperative launch (grid-wide sync)");
  cmd->add_flag("--pdl", args.pdl, "programmatic dependent launch");
  cmd->add_option("--priority", args.priority, "stream priority (lower is higher)");
  cmd->add_flag("--json", args.json, "print JSON");
  cmd->add_option("-I,--include-dir", args.compile.include_dirs, "header directory (sent with the request)");
  cmd->add_option("-D,--define", args.compile.defines, "define a macro");
  cmd->add_option("--name-expr", args.compile.name_expressions, "a template instantiation to compile");
  cmd->add_option("--pipeline", args.compile.pipeline, "a named pipeline");
  cmd->add_option("--kind", args.compile.kind, "input kind when the extension does not say (as kjit compile)");
  // A Triton kernel's block, shared memory, clusters, cooperative and PDL
  // come from its metadata; --grid counts programs, as Triton's grid does.
  cmd->add_option("--triton-option", args.compile.triton_options,
                  "Triton input (.ttir, .ttgir): one of Triton's compile options, NAME=VALUE (as kjit compile)");
  cmd->add_option("--triton", args.compile.triton_build, "Triton input: the Triton build to compile with");
  cmd->add_option("--triton-edit", args.compile.triton_edits,
                  "Triton input: an edit to the build's stages, OP:ANCHOR[:PASS] (as kjit compile)");
}

Result<KernelRef> kernel_ref(const LaunchArgsCli& args) {
  KernelRef ref;
  ref.kernel = args.kernel;
  ref.device_target = args.device_target;
  if (!args.key.empty()) {
    ref.key = args.key;
    return ref;
  }
  if (args.compile.file.empty()) return make_error(ErrorCode::invalid_argument, "give a kernel FILE or --key");
  Result<CompileRequest> request = build_compile_request(args.compile);
  if (!request) return request.error();
  ref.compile = std::move(request.value());
  // A plan needs the kernel's launch metadata, not a cubin: PTX will do when
  // the toolkit cannot build for the target.
  ref.compile.allow_ptx_fallback = true;
  return ref;
}

Result<LaunchConfig> launch_config(const LaunchArgsCli& args) {
  LaunchConfig config;
  // Without --block: the kernel's own block for Triton input or a cache key
  // (the daemon takes a Triton kernel's from its metadata), else one thread.
  const bool kernel_decides = !args.key.empty() || input_kind_of(args.compile) == InputKind::triton;
  auto grid = parse_dims(args.grid);
  auto block = args.block.empty() ? std::optional<Dim3>(kernel_decides ? Dim3{0, 0, 0} : Dim3{1, 1, 1})
                                  : parse_dims(args.block);
  if (!grid || !block) return make_error(ErrorCode::invalid_argument, "--grid and --block take X[,Y,Z]");
  config.grid = *grid;
  config.block = *block;
  if (!args.cluster.empty()) {
    auto cluster = parse_dims(args.cluster);
    if (!cluster) return make_error(ErrorCode::invalid_argument, "--cluster takes X[,Y,Z]");
    config.cluster = *cluster;
  }
  config.dynamic_shared_bytes = args.dynamic_smem;
  config.cooperative = args.cooperative;
  config.programmatic_dependent_launch = args.pdl;
  config.stream_priority = args.priority;
  return config;
}

nlohmann::json plan_to_json(const PlannedLaunch& plan) {
  auto attributes = [](const std::vector<PlannedAttribute>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const PlannedAttribute& a : list)
      out.push_back({{"name", a.name}, {"id", a.id}, {"value", a.values.size() == 1 ? nlohmann::json(a.values[0]) : nlohmann::json(a.values)}});
    return out;
  };
  return {
      {"kernel", plan.kernel},
      {"target", plan.target},
      {"grid", {plan.grid.x, plan.grid.y, plan.grid.z}},
      {"block", {plan.block.x, plan.block.y, plan.block.z}},
      {"dynamic_shared_bytes", plan.dynamic_shared_bytes},
      {"static_shared_bytes", plan.static_shared_bytes},
      {"function_attributes", attributes(plan.function_attributes)},
      {"launch_attributes", attributes(plan.launch_attributes)},
      {"oversized_shared_memory", plan.oversized_shared_memory},
      {"rests_on_ptx", plan.rests_on_ptx},
      {"limits_from_device", plan.limits_from_device},
      {"notes", plan.notes},
      {"kernel_info", kernel_to_json(plan.kernel_info)},
      {"key", plan.key},
  };
}

Result<LaunchValue> parse_launch_value(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return make_error(ErrorCode::invalid_argument, "--arg wants TYPE:VALUE, got '" + text + "'");
  std::string type = text.substr(0, colon), value = text.substr(colon + 1);
  LaunchValue v;
  auto integer = [&](LaunchValue::Kind kind) -> Result<LaunchValue> {
    v.kind = kind;
    const char* begin = value.data();
    int base = 10;
    if (value.starts_with("0x")) { begin += 2; base = 16; }
    auto [ptr, ec] = std::from_chars(begin, value.data() + value.size(), v.integer, base);
    if (ec != std::errc{} || ptr != value.data() + value.size())
      return make_error(ErrorCode::invalid_argument, "--arg " + text + ": not an integer");
    return v;
  };
  if (type == "i32") return integer(LaunchValue::Kind::i32);
  if (type == "u32") return integer(LaunchValue::Kind::u32);
  if (type == "i64") return integer(LaunchValue::Kind::i64);
  if (type == "u64") return integer(LaunchValue::Kind::u64);
  if (type == "f32" || type == "f64") {
    v.kind = type == "f32" ? LaunchValue::Kind::f32 : LaunchValue::Kind::f64;
    try {
      size_t used = 0;
      v.real = std::stod(value, &used);
      if (used != value.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      return make_error(ErrorCode::invalid_argument, "--arg " + text + ": not a number");
    }
    return v;
  }
  if (type == "buf") {
    std::ifstream in(value, std::ios::binary);
    if (!in) return make_error(ErrorCode::invalid_argument, "--arg " + text + ": cannot read " + value);
    std::ostringstream content;
    content << in.rdbuf();
    v.kind = LaunchValue::Kind::buffer;
    v.buffer.data = content.str();
    return v;
  }
  if (type == "zeros") {
    v.kind = LaunchValue::Kind::buffer;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v.buffer.size);
    if (ec != std::errc{} || ptr != value.data() + value.size() || v.buffer.size == 0)
      return make_error(ErrorCode::invalid_argument, "--arg " + text + ": zeros:BYTES");
    v.buffer.data.assign(v.buffer.size, '\0');
    return v;
  }
  return make_error(ErrorCode::invalid_argument,
                    "--arg " + text + ": type must be i32, u32, i64, u64, f32, f64, buf:FILE or zeros:BYTES");
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, LaunchArgsCli& args) {
  CLI::App* cmd = app.add_subcommand("plan", "show the launch plan (function and launch attributes) without launching");
  add_shape_options(cmd, args);
  return cmd;
}

CLI::App* add_launch_command(CLI::App& app, LaunchArgsCli& args) {
  CLI::App* cmd = app.add_subcommand("launch", "launch a kernel on the daemon's GPU");
  add_shape_options(cmd, args);
  cmd->add_option("--arg", args.args, "argument TYPE:VALUE (i32, u32, i64, u64, f32, f64, buf:FILE, zeros:BYTES)");
  cmd->add_option("--out", args.outs, "return argument N's buffer (0-based), written to OUT_DIR/argN.bin");
  cmd->add_option("--out-dir", args.out_dir, "where returned buffers are written");
  return cmd;
}

int run_plan(const LaunchArgsCli& args, const Connection& connection) {
  Result<KernelRef> ref = kernel_ref(args);
  if (!ref) return usage_error("plan", ref.error().message);
  Result<LaunchConfig> config = launch_config(args);
  if (!config) return usage_error("plan", config.error().message);
  Result<PlannedLaunch> plan = connection.client().plan_launch(*ref, *config);
  if (!plan) return report_error(plan.error(), connection.target);
  if (args.json) std::cout << plan_to_json(*plan).dump() << std::endl;
  else std::cout << plan->description << std::flush;
  return k_exit_ok;
}

int run_launch(const LaunchArgsCli& args, const Connection& connection) {
  Result<KernelRef> ref = kernel_ref(args);
  if (!ref) return usage_error("launch", ref.error().message);
  Result<LaunchConfig> config = launch_config(args);
  if (!config) return usage_error("launch", config.error().message);
  std::vector<LaunchValue> values;
  for (const std::string& text : args.args) {
    Result<LaunchValue> value = parse_launch_value(text);
    if (!value) return usage_error("launch", value.error().message);
    values.push_back(std::move(value.value()));
  }
  for (int out : args.outs) {
    if (out < 0 || static_cast<size_t>(out) >= values.size() || values[out].kind != LaunchValue::Kind::buffer)
      return usage_error("launch", "--out " + std::to_string(out) + " names no buffer argument");
    values[out].buffer.return_contents = true;
  }
  Result<RemoteLaunchResult> result = connection.client().launch(*ref, *config, values);
  if (!result) return report_error(result.error(), connection.target);
  nlohmann::json outputs = nlohmann::json::array();
  for (int out : args.outs) {
    std::string path = (std::filesystem::path(args.out_dir) / ("arg" + std::to_string(out) + ".bin")).string();
    std::ofstream(path, std::ios::binary).write(result->outputs[out].data(), static_cast<std::streamsize>(result->outputs[out].size()));
    outputs.push_back({{"arg", out}, {"path", path}, {"bytes", result->outputs[out].size()}});
  }
  if (args.json) {
    std::cout << nlohmann::json{{"kernel_ms", result->kernel_ms}, {"outputs", outputs}, {"plan", plan_to_json(result->plan)}}.dump()
              << std::endl;
  } else {
    std::printf("kernel time: %.3f ms\n", result->kernel_ms);
    for (const auto& o : outputs) std::printf("arg %d -> %s\n", o["arg"].get<int>(), o["path"].get<std::string>().c_str());
  }
  return k_exit_ok;
}

}  // namespace kjit::cli
