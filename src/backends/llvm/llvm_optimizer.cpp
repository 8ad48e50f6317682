#include "backends/llvm/llvm_optimizer.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/PassPlugin.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>

#include <map>
#include <mutex>

#include "backends/llvm/module_pass_runner.h"

namespace kjit {
namespace {

std::mutex g_plugins_mutex;
std::map<std::string, llvm::PassPlugin> g_plugins;  // path -> loaded plugin

}  // namespace

Status load_llvm_pass_plugin(const std::string& path) {
  std::lock_guard lock(g_plugins_mutex);
  if (g_plugins.count(path)) return Ok{};
  llvm::Expected<llvm::PassPlugin> plugin = llvm::PassPlugin::Load(path);
  if (!plugin) {
    return make_error(ErrorCode::failed_precondition,
                      "cannot load LLVM pass plugin " + path + ": " + llvm::toString(plugin.takeError()));
  }
  g_plugins.emplace(path, *plugin);
  return Ok{};
}

Result<std::string> run_llvm_passes(const LlvmOptimizeRequest& request) {
  for (const std::string& path : request.pass_plugin_paths)
    if (Status s = load_llvm_pass_plugin(path); !s) return s.error();

  std::string bitcode;
  Status status = with_parsed_module(
      "llvm-passes", request.ir, request.name, request.target,
      [&](ParsedModule& parsed, LlvmDiagnostics& diagnostics) -> Status {
    llvm::Module& module = *parsed.module;

    ModulePassRunner runner(parsed.machine.get(), [](llvm::PassBuilder& builder) {
      std::lock_guard lock(g_plugins_mutex);
      for (auto& [path, plugin] : g_plugins) plugin.registerPassBuilderCallbacks(builder);
    });
    llvm::ModulePassManager passes;
    if (llvm::Error error = runner.builder().parsePassPipeline(passes, request.pipeline)) {
      return make_error(ErrorCode::invalid_argument,
                        "llvm-passes: pipeline '" + request.pipeline + "' is invalid: " + llvm::toString(std::move(error)));
    }
    runner.run(passes, module);
    if (diagnostics.has_errors()) {
      return make_error(ErrorCode::invalid_argument, "llvm-passes reported problems", diagnostics.log());
    }
    bitcode = write_bitcode(module);
    return Ok{};
  });
  if (!status) return status.error();
  return bitcode;
}

}  // namespace kjit
