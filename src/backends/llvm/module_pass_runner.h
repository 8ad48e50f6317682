// The new pass manager's four analysis managers, registered and wired to
// one another, for running module passes on one module: what every LLVM
// pass kjit runs (libdevice-link, nvvm-reflect, llvm-passes) needs. Seen
// only by the files of src/backends/llvm.
#pragma once

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include <functional>

namespace kjit {

class ModulePassRunner {
 public:
  // `extend` sees the builder before its analyses are registered (pass
  // plugins register their callbacks there).
  explicit ModulePassRunner(llvm::TargetMachine* machine, const std::function<void(llvm::PassBuilder&)>& extend = {})
      : builder_(machine) {
    if (extend) extend(builder_);
    builder_.registerModuleAnalyses(modules_);
    builder_.registerCGSCCAnalyses(sccs_);
    builder_.registerFunctionAnalyses(functions_);
    builder_.registerLoopAnalyses(loops_);
    builder_.crossRegisterProxies(loops_, functions_, sccs_, modules_);
  }

  llvm::PassBuilder& builder() { return builder_; }
  void run(llvm::ModulePassManager& passes, llvm::Module& module) { passes.run(module, modules_); }

 private:
  // Declared before the builder, so destroyed after it, as LLVM's own tools
  // order them.
  llvm::LoopAnalysisManager loops_;
  llvm::FunctionAnalysisManager functions_;
  llvm::CGSCCAnalysisManager sccs_;
  llvm::ModuleAnalysisManager modules_;
  llvm::PassBuilder builder_;
};

}  // namespace kjit
