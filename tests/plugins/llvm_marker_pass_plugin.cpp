// Example LLVM pass plugin, loaded by LLVM's own PassPlugin::Load: registers
// the module pass "kjit-test-marker", usable by name in the llvm-passes
// pipeline text. The pass adds a global the PTX then shows.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/PassPlugin.h>

namespace {

struct MarkerPass : llvm::PassInfoMixin<MarkerPass> {
  llvm::PreservedAnalyses run(llvm::Module& module, llvm::ModuleAnalysisManager&) {
    auto* type = llvm::Type::getInt32Ty(module.getContext());
    new llvm::GlobalVariable(module, type, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantInt::get(type, 42), "kjit_test_marker", nullptr,
                             llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/1);
    return llvm::PreservedAnalyses::none();
  }
};

}  // namespace

extern "C" LLVM_ATTRIBUTE_WEAK llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "kjit-test-marker", "1.0", [](llvm::PassBuilder& builder) {
            builder.registerPipelineParsingCallback(
                [](llvm::StringRef name, llvm::ModulePassManager& passes, llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
                  if (name != "kjit-test-marker") return false;
                  passes.addPass(MarkerPass());
                  return true;
                });
          }};
}
